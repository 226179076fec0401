/**
 * `taskq jobs explain`, run in-process through the command `jobsExplainCommand` builds (the lead
 * attaches it to the `taskq jobs` group), against real Postgres.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { TaskQ } from '../../src/client/taskq.js';
import { jobsExplainCommand } from '../../src/cli/jobs-explain-command.js';
import { CliExit, type CliIo } from '../../src/cli/io.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';

const QUEUE = 'cli_explain_q';
const work = actor({ name: 'cli_explain', queue: QUEUE }, async () => undefined);

let db: TestSchema;
let tq: TaskQ;
beforeAll(async () => {
  db = await migratedSchema('cliexpl');
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
});
afterAll(async () => {
  await tq.close();
  await db.drop();
});

/** Runs `taskq jobs explain <argv>` as `runCli` would: the exit code and what it printed. */
async function explain(
  argv: string[],
  env: NodeJS.ProcessEnv = { TASKQ_PG_DSN: TEST_DSN, TASKQ_SCHEMA_NAME: db.schema },
): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIo = { out: (l) => out.push(l), err: (l) => err.push(l), env };
  let code = 0;
  try {
    await jobsExplainCommand(io)
      .exitOverride()
      .configureOutput({ writeErr: (s) => err.push(s), writeOut: (s) => out.push(s) })
      .parseAsync(argv, { from: 'user' });
  } catch (e) {
    if (!(e instanceof CliExit)) throw e;
    code = e.exitCode;
    err.push(e.message);
  }
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('taskq jobs explain', () => {
  it('prints the verdict and each reason, most decisive first', async () => {
    const job = await tq.enqueue(work, {}, { delay: '1h' });
    const r = await explain([job.jobId]);
    expect(r.code).toBe(0);
    const lines = r.out.split('\n');
    expect(lines[0]).toBe(
      `job ${job.jobId} (actor cli_explain, queue ${QUEUE}, strict_fifo): scheduled, waiting`,
    );
    expect(lines[1]).toMatch(/^ {2}1\. unregistered-actor: no worker has registered actor cli_explain/);
    expect(lines[2]).toMatch(/^ {2}2\. no-worker: no worker seen in the last 1m serves queue cli_explain_q/);
    expect(lines[3]).toMatch(/^ {2}3\. scheduled: scheduled for \S+Z \(in (59m|1h)/);
    expect(lines[4]).toMatch(/^checked at \S+Z \(database clock\)$/);
  });

  it('--json prints the explanation as JSON, times as ISO strings', async () => {
    await db.pool.query(`INSERT INTO "${db.schema}".actor_config (actor, queue) VALUES ('cli_explain', $1)`, [
      QUEUE,
    ]);
    await db.pool.query(
      `INSERT INTO "${db.schema}".workers (id, hostname, pid, queues) VALUES (gen_random_uuid(), 'h', 1, $1)`,
      [[QUEUE]],
    );
    const job = await tq.enqueue(work, {}, { delay: '1h' });
    const r = await explain([job.jobId, '--json', '--worker-alive-within', '2m']);
    expect(r.code).toBe(0);
    const parsed = JSON.parse(r.out) as Record<string, unknown> & { reasons: Record<string, unknown>[] };
    expect(parsed).toMatchObject({ jobId: job.jobId, status: 'scheduled', verdict: 'waiting' });
    expect(parsed.reasons.map((x) => x.kind)).toEqual(['scheduled']);
    expect(parsed.reasons[0]!.scheduledAt).toBe(job.row.scheduledAt.toISOString());
  });

  it('says when nothing holds a job back', async () => {
    const job = await tq.enqueue(work, {});
    const r = await explain([job.jobId]);
    expect(r.out).toContain(': pending, ready');
    expect(r.out).toContain('nothing holds it back');
  });

  it('exits 1 for a job that does not exist, 2 for bad input, naming the argument or flag', async () => {
    const missing = await explain(['018f0000-0000-7000-8000-0000000e0ccc']);
    expect(missing).toMatchObject({ code: 1 });
    expect(missing.err).toContain('job 018f0000-0000-7000-8000-0000000e0ccc does not exist');

    const cases: [string[], string][] = [
      [['nope'], '<jobId>: "nope" is invalid: must be a UUID'],
      [
        ['018f0000-0000-7000-8000-0000000e0ccc', '--worker-alive-within', 'soon'],
        '--worker-alive-within: "soon" is invalid',
      ],
      [['018f0000-0000-7000-8000-0000000e0ccc', '--list-limit', 'x'], '--list-limit: "x" is invalid'],
      [['018f0000-0000-7000-8000-0000000e0ccc', '--list-limit', '5000'], '--list-limit: 5000 is invalid'],
    ];
    for (const [argv, message] of cases) {
      const r = await explain(argv);
      expect(r.code, argv.join(' ')).toBe(2);
      expect(r.err).toContain(message);
    }
    const noDb = await explain(['018f0000-0000-7000-8000-0000000e0ccc'], {});
    expect(noDb).toMatchObject({ code: 2 });
    expect(noDb.err).toContain('no database');
  });
});
