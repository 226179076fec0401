/**
 * SIGHUP asks a worker process for a credential reload (docs/credentials.md) instead of ending it,
 * as Node's default action for the signal would; the worker keeps running jobs, and SIGTERM still
 * stops it with exit code 0.
 */
import { describe, expect, it } from 'vitest';

import { record_ } from '../fixtures/fleet-actors.js';
import { TEST_RUNS_TABLE, useProcessFleet } from '../helpers/process-fleet.js';
import { waitFor } from '../helpers/wait.js';
import type { WorkerProcess } from '../helpers/worker-process.js';

const fleet = useProcessFleet(
  'sighup',
  { TASKQ_QUEUES: 'fleet', TASKQ_LOG_LEVEL: 'info', TASKQ_NOTIFY_POLL_INTERVAL: '1' },
  { test_runs: TEST_RUNS_TABLE },
);

const reloadLines = (w: WorkerProcess): string[] =>
  w.stdout.filter((l) => l.includes('"credentials-reloaded"'));

describe('SIGHUP on a worker process', () => {
  it('reloads credentials for the signals it sees, never more passes than signals, and keeps running', async () => {
    const worker = fleet.start();
    await worker.ready;
    worker.proc.kill('SIGHUP');
    worker.proc.kill('SIGHUP');
    worker.proc.kill('SIGHUP');
    await waitFor(() => reloadLines(worker).length >= 1, 10_000, 'a credentials-reloaded line');
    const line = JSON.parse(reloadLines(worker).at(-1)!) as { trigger: string; failed: unknown[] };
    expect(line.trigger).toBe('signal');
    expect(line.failed).toEqual([]);

    const handle = await fleet.tq.enqueue(record_, { ms: 0 });
    await expect(handle.wait({ timeout: 20_000 })).resolves.toBeUndefined();
    // The kernel may merge signals sent back to back. Each one the worker saw asked for a pass; those
    // that came while a pass ran joined the next one (the coalescing itself is
    // test/credentials/credential-reloader.test.ts's), so there are never more passes than signals.
    const seen = worker.stdout.filter((l) => l.includes('"worker-signal"') && l.includes('SIGHUP')).length;
    expect(seen).toBeGreaterThanOrEqual(1);
    expect(reloadLines(worker).length).toBeLessThanOrEqual(seen);
    const exit = await worker.stop();
    expect(exit.code).toBe(0);
  });
});
