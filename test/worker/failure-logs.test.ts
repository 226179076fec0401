/**
 * Issue 63, acceptance: "A failed job's class and message appear in the worker log at the default
 * level; the payload does not." A worker process started as an operator starts one (no logger of
 * its own, no `TASKQ_LOG_LEVEL`), in each log format, runs a job whose handler always throws a
 * `LedgerOutOfBalance` and whose payload holds a marker string; its stdout and stderr are read whole.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { TaskQ } from '../../src/client/taskq.js';
import { fails } from '../fixtures/log-actors.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';
import { startWorkerProcess, type WorkerProcess } from '../helpers/worker-process.js';

const MARKER = 'tq-secret-marker-5b0e2c';
const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';

let db: TestSchema;
let tq: TaskQ;
const procs: WorkerProcess[] = [];

beforeAll(async () => {
  db = await migratedSchema('failure_logs');
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
});
afterAll(async () => {
  await Promise.all(procs.map((p) => p.stop()));
  await tq.close();
  await db.drop();
});

/** Runs one failing job on a fresh worker process in `format`; returns its whole output and the job id. */
async function failOneJob(
  format: 'json' | 'console' | undefined,
  level?: string,
): Promise<{ output: string[]; jobId: string }> {
  const worker = startWorkerProcess(
    db.schema,
    {
      TASKQ_QUEUES: 'failure_logs',
      TASKQ_LOG_LEVEL: level,
      TASKQ_LOG_FORMAT: format,
      TASKQ_NOTIFY_POLL_INTERVAL: '1',
    },
    'test/fixtures/log-worker.ts',
  );
  procs.push(worker);
  await worker.ready;
  const handle = await tq.enqueue(fails, { secret: MARKER }, { traceId: TRACE_ID });
  await waitFor(async () => (await handle.status()) === 'failed', 20_000);
  // The error line is written after the outcome is: wait for it, then for the process to end.
  await waitFor(() => worker.stdout.some((l) => l.includes('job-failed')), 10_000);
  const exit = await worker.stop();
  expect(exit.code).toBe(0);
  return { output: [...worker.stdout, ...worker.stderr.join('').split('\n')], jobId: handle.jobId };
}

describe("a failed job in the worker's log at the default level (issue 63)", () => {
  it('json: job-failed (error) and job-attempt-failed (warn) carry the class, the message and the job fields; the payload never appears', async () => {
    const { output, jobId } = await failOneJob(undefined);
    const records = output.flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
    const failed = records.filter((r) => r.msg === 'job-failed');
    console.log(`json: ${output.length} lines; the error line: ${JSON.stringify(failed[0])}`);
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({
      level: 50,
      jobId,
      actor: 'log_fails',
      queue: 'failure_logs',
      attempt: 2,
      traceId: TRACE_ID,
      errorClass: 'LedgerOutOfBalance',
      message: 'ledger 7 is off by 42 cents (attempt 2)',
    });
    expect(records.find((r) => r.msg === 'job-attempt-failed')).toMatchObject({
      level: 40,
      jobId,
      attempt: 1,
      errorClass: 'LedgerOutOfBalance',
      message: 'ledger 7 is off by 42 cents (attempt 1)',
      retryInMs: 10,
    });
    // The handler's own line through jobLogger(), at info, with the job's fields.
    expect(
      records.filter((r) => r.msg === 'user-reconcile-started').map((r) => [r.jobId, r.attempt]),
    ).toEqual([
      [jobId, 1],
      [jobId, 2],
    ]);
    expect(output.filter((l) => l.includes(MARKER))).toEqual([]);
  });

  it('console (TASKQ_LOG_FORMAT=console): the same error line, readable, and still no payload', async () => {
    const { output, jobId } = await failOneJob('console');
    const failed = output.filter((l) => / ERROR job-failed /.test(l));
    console.log(`console: ${output.length} lines; the error line: ${failed[0]}`);
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ERROR job-failed /);
    expect(failed[0]).toContain(
      `jobId=${jobId} actor=log_fails queue=failure_logs attempt=2 traceId=${TRACE_ID}`,
    );
    expect(failed[0]).toContain(
      'errorClass=LedgerOutOfBalance message="ledger 7 is off by 42 cents (attempt 2)"',
    );
    expect(output.some((l) => / WARN {2}job-attempt-failed .*attempt=1 /.test(l))).toBe(true);
    // No JSON log records in this format (the fixture's own `ready` line aside).
    expect(output.filter((l) => l.startsWith('{') && !l.includes('"event"'))).toEqual([]);
    expect(output.filter((l) => l.includes(MARKER))).toEqual([]);
  });
});

describe('TASKQ_LOG_LEVEL', () => {
  it('error: the job-failed line is written, the warn and info lines of the same job are not', async () => {
    const { output, jobId } = await failOneJob(undefined, 'error');
    const records = output.flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
    expect(records.filter((r) => r.msg === 'job-failed').map((r) => r.jobId)).toEqual([jobId]);
    // At the default level (info) both of these appear (the test above).
    expect(
      records.filter((r) => r.msg === 'job-attempt-failed' || r.msg === 'user-reconcile-started'),
    ).toEqual([]);
  });
});
