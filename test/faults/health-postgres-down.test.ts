/**
 * The health endpoints of a saturated worker process while Postgres goes away and comes back, on a
 * cluster of the test's own (pg-cluster.ts), never the machine's server: `/ready` turns not-ready
 * (naming the failed Postgres ping) and ready again, once with the server stopped and once frozen
 * (SIGSTOP: the ping is cut off at its timeout); `/live` answers throughout; every probe, over
 * TCP and over the Unix socket, answers within the probe timeout. At the end a SIGTERM shows the
 * shutdown phase in `/ready`'s body.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { TaskQ } from '../../src/client/taskq.js';
import { cooperative } from '../fixtures/fleet-actors.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';
import { freePort } from '../helpers/free-port.js';
import { probe, type HealthTarget, type ProbeAnswer } from '../helpers/health-probe.js';
import { startPgCluster, type PgCluster } from '../helpers/pg-cluster.js';
import { makeScratchDir } from '../helpers/scratch-dir.js';
import { waitFor } from '../helpers/wait.js';
import { startWorkerProcess, type WorkerProcess } from '../helpers/worker-process.js';

/** What a probe allows an answer (the readiness check timeout's default, the reference's probe timeout). */
const PROBE_TIMEOUT_MS = 5000;
const SLOTS = 4;

let cluster: PgCluster;
let db: TestSchema;

/** The postmaster and every process it started (backends, checkpointer, …). */
function clusterPids(): number[] {
  const root = cluster.pid();
  if (root === null) return [];
  const children = readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        // Field 4 of /proc/<pid>/stat is the parent pid (after the parenthesised command name).
        const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === root;
      } catch {
        return false;
      }
    })
    .map(Number);
  return [root, ...children];
}

/** Freezes (SIGSTOP) or thaws (SIGCONT) the whole cluster: connections stay open, nothing answers. */
function freezeCluster(signal: 'SIGSTOP' | 'SIGCONT'): void {
  for (const pid of clusterPids()) {
    try {
      process.kill(pid, signal);
    } catch {
      // gone meanwhile
    }
  }
}

beforeAll(async () => {
  cluster = await startPgCluster();
  db = await migratedSchema('health', cluster.dsn);
});
afterAll(async () => {
  await db?.pool.end().catch(() => undefined);
  await cluster?.destroy();
});

describe('health endpoints while Postgres goes away', () => {
  it('/ready follows Postgres, /live stays up, both answer in time under a saturated worker', async () => {
    const port = await freePort();
    const socketPath = join(makeScratchDir('taskq-health-fault-'), 'health.sock');
    const tcp: HealthTarget = { host: '127.0.0.1', port };
    const socket: HealthTarget = { socketPath };
    const worker: WorkerProcess = startWorkerProcess(db.schema, {
      TASKQ_PG_DSN: cluster.dsn,
      TASKQ_QUEUES: 'cancel',
      TASKQ_MAX_CONCURRENCY: String(SLOTS),
      TASKQ_PREFETCH: '0',
      TASKQ_HEARTBEAT_INTERVAL: '1',
      TASKQ_LOCK_LEASE: '60',
      // The outage must not end the worker: it is the probes' business to report it.
      TASKQ_MAX_HEARTBEAT_FAILURES: '1000',
      TASKQ_NOTIFY_HEALTH_CHECK_INTERVAL: '0.5',
      TASKQ_NOTIFY_RECONNECT_BACKOFF_INITIAL: '0.2',
      TASKQ_CANCELLATION_GRACE_PERIOD: '2',
      TASKQ_CLEANUP_GRACE_PERIOD: '2',
      TASKQ_TERMINATION_GRACE_PERIOD: '20',
      TASKQ_HEALTH_ENABLED: 'true',
      TASKQ_HEALTH_HOST: '127.0.0.1',
      TASKQ_HEALTH_PORT: String(port),
      TASKQ_HEALTH_SOCKET_PATH: socketPath,
      TASKQ_HEALTH_TASKS_ENABLED: 'true',
    });
    const answers: { phase: string; path: string; via: string; a: ProbeAnswer }[] = [];
    let phase = 'saturated';
    const ask = async (target: HealthTarget, path: string): Promise<ProbeAnswer> => {
      // A probe that gets no answer within PROBE_TIMEOUT_MS rejects, and fails the test.
      const a = await probe(target, path, { timeoutMs: PROBE_TIMEOUT_MS });
      answers.push({ phase, path, via: target === tcp ? 'tcp' : 'socket', a });
      return a;
    };
    const readyEverywhere = async (status: number): Promise<boolean> => {
      const [t, s] = await Promise.all([ask(tcp, '/ready'), ask(socket, '/ready')]);
      return t.status === status && s.status === status;
    };
    const tq = await TaskQ.open({ dsn: cluster.dsn, schema: db.schema });
    try {
      await worker.ready;
      // Saturate: every slot busy with a handler sleeping on timers, and a backlog behind them.
      await tq.enqueueBatch(
        Array.from({ length: 40 }, () => ({ actor: cooperative, payload: { ms: 4000 } })),
      );
      await waitFor(
        async () => {
          const tasks = await ask(socket, '/tasks');
          const jobs = (tasks.body?.jobs ?? []) as { state: string; actor: string; startedAt: string }[];
          return jobs.filter((j) => j.state === 'running').length === SLOTS;
        },
        30_000,
        'every slot busy',
      );
      const tasks = (await ask(socket, '/tasks')).body!;
      expect(tasks).toMatchObject({
        phase: 'running',
        inFlight: SLOTS,
        services: { heartbeat: true, progressFlusher: true },
        notifyConnected: true,
      });
      console.log(`/tasks of the saturated worker: ${JSON.stringify(tasks)}`);
      expect((tasks.jobs as { actor: string; startedAt: string | null }[])[0]).toMatchObject({
        actor: 'cooperative',
        startedAt: expect.any(String),
      });
      expect((await ask(tcp, '/tasks')).status).toBe(404);
      const pending = await db.pool.query(
        `SELECT count(*)::int AS n FROM "${db.schema}".jobs WHERE status = 'pending'`,
      );
      expect(pending.rows[0].n).toBeGreaterThan(0);

      await waitFor(() => readyEverywhere(200), 10_000, '/ready 200 on both listeners');
      const readyBody = answers.at(-1)!.a.body!;
      expect(readyBody).toMatchObject({
        status: 'ready',
        phase: 'running',
        checks: { postgres: { ok: true } },
      });

      phase = 'postgres-down';
      await cluster.stop('fast');
      await waitFor(() => readyEverywhere(503), 10_000, '/ready 503 on both listeners');
      const down = answers.at(-1)!.a.body!;
      expect(down).toMatchObject({
        status: 'not-ready',
        phase: 'running',
        checks: { postgres: { ok: false } },
      });
      // Liveness is not readiness: the process answers while its database is away.
      for (let i = 0; i < 10; i++) {
        expect((await ask(tcp, '/live')).status).toBe(200);
        expect((await ask(socket, '/live')).status).toBe(200);
        expect(await readyEverywhere(503)).toBe(true);
      }
      expect(worker.proc.exitCode).toBeNull();

      phase = 'postgres-back';
      await cluster.start();
      await waitFor(() => readyEverywhere(200), 30_000, '/ready 200 again on both listeners');
      expect((await ask(tcp, '/live')).status).toBe(200);

      // A frozen server (connections open, nothing answers): the ping is cut off at its 200 ms timeout.
      phase = 'postgres-frozen';
      freezeCluster('SIGSTOP');
      try {
        await waitFor(() => readyEverywhere(503), 10_000, '/ready 503 while Postgres is frozen');
        expect(answers.at(-1)!.a.body!.checks).toMatchObject({
          postgres: { ok: false, error: 'timed out after 200ms' },
        });
        for (let i = 0; i < 5; i++) {
          expect((await ask(tcp, '/live')).status).toBe(200);
          expect((await ask(socket, '/live')).status).toBe(200);
          expect(await readyEverywhere(503)).toBe(true);
        }
      } finally {
        freezeCluster('SIGCONT');
      }
      phase = 'postgres-thawed';
      await waitFor(() => readyEverywhere(200), 30_000, '/ready 200 after the thaw');

      // Shutdown: not ready as soon as it begins, the phase in the body; still live.
      phase = 'shutdown';
      worker.proc.kill('SIGTERM');
      await waitFor(
        async () => {
          const a = await ask(tcp, '/ready').catch(() => null);
          return a !== null && a.status === 503 && a.body?.phase !== 'running';
        },
        10_000,
        'a shutdown phase in /ready',
      );
      const shutdownBody = answers.at(-1)!.a.body!;
      expect(['draining', 'cancelling', 'forcing', 'abandoning']).toContain(shutdownBody.phase);
      // (Its checks are empty, or those of a probe that began just before the shutdown did.)
      expect(shutdownBody.status).toBe('not-ready');
      expect((await ask(socket, '/live')).status).toBe(200);
      expect((await worker.exited).code).toBe(0);
    } catch (err) {
      console.log(
        `worker exit ${worker.proc.exitCode}; stderr:\n${worker.stderr.join('\n')}\nstdout:\n${worker.stdout.slice(-20).join('\n')}`,
      );
      throw err;
    } finally {
      freezeCluster('SIGCONT');
      if (worker.proc.exitCode === null) await worker.stop();
      await tq.close();
      const byGroup = new Map<string, number[]>();
      for (const { phase: p, path, via, a } of answers) {
        const key = `${p} ${path} ${via}`;
        byGroup.set(key, [...(byGroup.get(key) ?? []), a.ms]);
      }
      for (const [key, ms] of byGroup) {
        ms.sort((x, y) => x - y);
        console.log(
          `${key}: ${ms.length} answers, median ${ms[Math.floor(ms.length / 2)]} ms, max ${ms.at(-1)} ms`,
        );
      }
    }
  }, 120_000);
});
