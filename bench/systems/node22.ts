/**
 * The peers' releases that need Node 22, beside the Node 20 ones the other adapters measure:
 * - `graphile-018-tuned`: graphile-worker 0.18 in the configuration of `graphile-tuned`;
 * - `pgboss12`: pg-boss 12 with LISTEN/NOTIFY on and the settings its docs give for throughput.
 * Both sides use the peer's own API, in `bench/node22/peers.mjs`, under the Node 22 binary of
 * `bench/node22/` (bench/lib/node22.ts). The harness stays on Node 20, so the producer side runs in
 * a Node 22 child process (`bench/node22/producer-proc.mjs`) that this adapter talks to over IPC, and
 * the worker processes are `bench/worker-proc.ts` started under Node 22 (`WorkerSpec.execPath`).
 *
 * What the IPC hop changes in the figures: bulk calls and drains carry one round trip per call of
 * 1,000 jobs (negligible); the single-enqueue cases time their loop inside the child
 * (`timedSingles`), so no round trip per job is in them; the latency workload's enqueue calls
 * include one round trip each (tens of µs on loopback IPC), and its "load generator" CPU is the
 * harness's only, not the producer child's.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { PG_DSN, uniqueSuffix, type BenchPayload } from '../lib/common.js';
import { ensureNode22, NODE22_DIR, node22Binary } from '../lib/node22.js';
import type { RunningWorker, SystemAdapter, WorkerHooks, WorkerSpec, WorkerStarter } from './types.js';

/** The Node 22 systems' ids. */
export type Node22Id = 'graphile-018-tuned' | 'pgboss12';

/** Connections the whole fleet of one run may use; as graphile.ts. */
const FLEET_CONNECTIONS = 60;

const INFO: Record<Node22Id, { title: string; pkg: string; settings: string; tag: string }> = {
  'graphile-018-tuned': {
    title: 'graphile-worker 0.18 (perf. page config, Node 22)',
    pkg: 'graphile-worker 0.18.0',
    settings: `as graphile-tuned: concurrentJobs c, maxPoolSize min(c + 1, 25, ⌊${FLEET_CONNECTIONS} / p⌋), localQueue.size 500, completeJobBatchDelay 0, failJobBatchDelay 0 (its performance page's configuration, at our concurrency); jobs without a queue name; producer and workers under Node 22`,
    tag: 'gw18',
  },
  pgboss12: {
    title: 'pg-boss 12 (LISTEN/NOTIFY, burst fetch, Node 22)',
    pkg: 'pg-boss 12.38.1',
    settings:
      'useListenNotify true and the queue created with notify true (each insert NOTIFYs the listening workers); one work() loop per process with batchSize c (the batch run concurrently) and burstWhenBatchFull true (fetch again at once while batches come back full, so a backlog never waits for the 30 s notify-mode poll), pollingIntervalSeconds 0.5 (its minimum; only while LISTEN is down); everything else default (pool max 10, notifyPollingIntervalSeconds 30); queue policy standard; producer and workers under Node 22',
    tag: 'pb12',
  },
};

const PRODUCER = fileURLToPath(new URL('producer-proc.mjs', pathToFileURL(NODE22_DIR)));
const PEERS_URL = new URL('peers.mjs', pathToFileURL(NODE22_DIR)).href;

/** What the producer child answers. */
type Reply = { id: number; value: unknown } | { id: number; error: string };

/**
 * The producer side: a proxy to a Node 22 child process started in `setup` and ended in `teardown`.
 * Throws `unavailable: <reason>` when there is no Node 22 binary (and it cannot be installed).
 */
export function createNode22System(id: Node22Id): SystemAdapter {
  const node = node22Binary();
  const info = INFO[id];
  const status = ensureNode22();
  const nodeVersion = status.ok ? status.version : '22';
  let schema = '';
  let child: ChildProcess | null = null;
  let nextId = 0;
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let stderr = '';

  const call = <T>(op: string, ...args: unknown[]): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      if (!child?.connected)
        return reject(new Error(`${id} producer process is not running: ${stderr.slice(-300)}`));
      const msgId = nextId++;
      pending.set(msgId, { resolve: resolve as (v: unknown) => void, reject });
      child.send({ id: msgId, op, args });
    });

  return {
    id,
    title: info.title,
    pkg: `${info.pkg} (Node ${nodeVersion.replace(/^v/, '')})`,
    store: 'postgres',
    settings: info.settings,
    async setup() {
      schema = `bench_${info.tag}_${uniqueSuffix()}`;
      const proc = fork(PRODUCER, [], {
        execPath: node,
        execArgv: [],
        env: { ...process.env, BENCH_NODE22_PRODUCER: JSON.stringify({ system: id, schema, dsn: PG_DSN }) },
        stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
        // The two Node versions' V8 serialisers need not agree; every message is plain data.
        serialization: 'json',
      });
      child = proc;
      proc.stderr?.on('data', (d: Buffer) => {
        stderr = (stderr + d.toString()).slice(-4000);
        process.stderr.write(d);
      });
      await new Promise<void>((resolve, reject) => {
        proc.on('message', (msg: Reply | { ready: true }) => {
          if ('ready' in msg) return resolve();
          const p = pending.get(msg.id);
          if (!p) return;
          pending.delete(msg.id);
          if ('error' in msg) p.reject(new Error(msg.error));
          else p.resolve(msg.value);
        });
        proc.on('exit', (code, signal) => {
          const err = new Error(
            `${id} producer process exited (code ${code}, signal ${signal}): ${stderr.slice(-300)}`,
          );
          reject(err);
          for (const p of pending.values()) p.reject(err);
          pending.clear();
        });
      });
      await call('setup');
    },
    async teardown() {
      const proc = child;
      if (!proc) return;
      try {
        if (proc.connected) await call('teardown');
      } finally {
        if (proc.exitCode === null && proc.signalCode === null) {
          const exited = new Promise<void>((r) => proc.once('exit', () => r()));
          if (proc.connected) proc.disconnect();
          const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
          await exited;
          clearTimeout(timer);
        }
        child = null;
      }
    },
    enqueueOne: (payload: BenchPayload) => call<void>('enqueueOne', payload),
    enqueueBulk: (payloads: BenchPayload[]) => call<void>('enqueueBulk', payloads),
    outstanding: () => call<number>('outstanding'),
    timedSingles: (count: number, callers: number, first = 0) =>
      call<number>('timedSingles', count, callers, first),
    workerSpec(concurrency, processes): WorkerSpec {
      return { system: id, namespace: schema, concurrency, processes, execPath: node };
    },
  };
}

/** The worker side of `peers.mjs`, as loaded under Node 22 (its types are those of types.ts). */
interface Peers {
  startWorker(spec: WorkerSpec, hooks: WorkerHooks, dsn: string): Promise<RunningWorker>;
}

/**
 * The worker starter of a Node 22 system, for `bench/worker-proc.ts` running under Node 22 (the
 * packages it imports resolve from `bench/node22/node_modules`).
 */
export function node22WorkerStarter(id: Node22Id): WorkerStarter {
  return async (spec, hooks) => {
    if (!process.versions.node.startsWith('22.'))
      throw new Error(
        `${id} workers need Node 22 (this is ${process.versions.node}): start them with its execPath`,
      );
    const peers = (await import(PEERS_URL)) as Peers;
    return peers.startWorker({ ...spec, system: id }, hooks, PG_DSN);
  };
}
