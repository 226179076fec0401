/**
 * The abandonment guard (DESIGN.md §4.1, phase 3): once the cancel protocol has marked a job
 * `abandoned`, the in-process handler that ignored its signal is orphaned. When that handler finally
 * returns — or throws — the worker must write nothing for it: the job stays `abandoned` with its one
 * attempt, and the worker carries on with other jobs. Real Postgres, in-process worker (so the test
 * can decide exactly when the orphan settles).
 */
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { TaskQ } from '../../src/client/taskq.js';
import type { Logger } from '../../src/obs/logger.js';
import { Worker } from '../../src/worker/worker.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';

const QUEUE = 'abandon_guard';

/** Per job: the gate the stubborn handler waits on, and a promise of its own end. */
const gates = new Map<
  string,
  { open: () => void; opened: Promise<void>; ended: Promise<void>; end: () => void }
>();
function gate(name: string): () => void {
  let open!: () => void;
  let end!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  const ended = new Promise<void>((r) => (end = r));
  gates.set(name, { open, opened, ended, end });
  return open;
}

const Stubborn = z.object({ gate: z.string(), mode: z.enum(['return', 'throw']) });

/** Ignores ctx.signal entirely; settles only when the test opens its gate (after abandonment). */
const stubborn = actor(
  { name: 'guard_stubborn', queue: QUEUE, payload: Stubborn, retry: { maxAttempts: 3 } },
  async (p) => {
    const g = gates.get(p.gate)!;
    try {
      await g.opened;
      if (p.mode === 'throw') throw new Error('failing long after being abandoned');
      return { late: 'value' };
    } finally {
      g.end();
    }
  },
);
const quick = actor({ name: 'guard_quick', queue: QUEUE }, async () => 'ok');

interface LogLine {
  level: string;
  msg: string;
  obj: Record<string, unknown>;
}
const logs: LogLine[] = [];
/** Records every line with its child bindings (job lines carry their jobId that way). */
function capturingLogger(bindings: Record<string, unknown> = {}): Logger {
  const at =
    (level: string) =>
    (obj: object, msg?: string): void =>
      void logs.push({ level, msg: msg ?? '', obj: { ...bindings, ...obj } });
  return {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: (more) => capturingLogger({ ...bindings, ...more }),
  };
}

let db: TestSchema;
let tq: TaskQ;
let worker: Worker;

beforeAll(async () => {
  db = await migratedSchema('abguard');
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
  worker = new Worker({
    actors: [stubborn, quick],
    settings: {
      pgDsn: TEST_DSN,
      schema: db.schema,
      queues: [QUEUE],
      maxConcurrency: 2,
      heartbeatInterval: '500ms',
      lockLease: '5s',
      cancellationGracePeriod: '500ms',
      cleanupGracePeriod: '500ms',
      watchdogEnabled: false,
    },
    logger: capturingLogger(),
  });
  await worker.start();
});
afterAll(async () => {
  for (const g of gates.values()) g.open();
  await worker?.stop();
  await tq?.close();
  await db?.drop();
});

describe('a handler that settles after its job was abandoned', () => {
  for (const mode of ['return', 'throw'] as const) {
    it(`(${mode}) writes no terminal state; the worker logs the orphan and keeps running jobs`, async () => {
      const name = `guard-${mode}`;
      const open = gate(name);
      const h = await tq.enqueue(stubborn, { gate: name, mode });
      try {
        await waitFor(async () => (await tq.getRow(h.jobId))?.status === 'running', 10_000, 'the job to run');
        await h.cancel('stop now');
        // Both graces pass with the handler still waiting on its gate: phase 2, then abandoned.
        await waitFor(async () => (await tq.getRow(h.jobId))?.status === 'abandoned', 15_000, 'abandonment');
        await waitFor(
          () => logs.some((l) => l.msg === 'handler-orphaned-abandoned' && l.obj.jobId === h.jobId),
          5000,
          'the orphan to be logged',
        );
      } finally {
        // Only now does the orphaned handler settle.
        open();
      }
      await gates.get(name)!.ended;
      // A job enqueued after the orphan settled runs to completion on the same worker: by then
      // anything the runner would have done with the late outcome has been done.
      const next = await tq.enqueue(quick, {});
      expect(await next.wait({ timeout: '10s' })).toBe('ok');
      await waitFor(() => worker.inFlight === 0, 5000, 'no job held by the worker');

      const row = (await tq.getRow(h.jobId))!;
      expect(row).toMatchObject({ status: 'abandoned', errorClass: 'Abandoned', lockedByWorker: null });
      expect(row.result ?? null).toBeNull();
      expect((await h.attempts()).map((a) => a.outcome)).toEqual(['abandoned']);
      const events = await h.events();
      expect(events.map((e) => [e.kind, e.detail.reason ?? null])).toEqual([
        ['state_change', 'dispatched'],
        ['cancel_request', null],
        ['state_change', 'cancel_escalated'],
        ['state_change', 'cancel_abandoned'],
      ]);
      expect(events.map((e) => e.detail.to_state)).not.toContain('succeeded');
      expect(events.map((e) => e.detail.to_state)).not.toContain('failed');
      // The runner did not even try: no settle was sent for a job it no longer owns.
      const about = logs.filter((l) => l.obj.jobId === h.jobId).map((l) => l.msg);
      expect(about).not.toContain('settle-noop-not-owner');
      expect(about).not.toContain('job-runner-crashed');
      expect(worker.phase).toBe('running');
    });
  }
});
