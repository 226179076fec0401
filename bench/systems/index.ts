/**
 * The systems the harness knows. Each is imported lazily, so a peer that fails to load is reported as
 * unavailable and the run goes on.
 */
import type { SystemAdapter, WorkerStarter } from './types.js';

export const SYSTEM_IDS = [
  'taskq',
  'taskq-tuned',
  'graphile',
  'graphile-tuned',
  'pgboss',
  'bullmq-redis',
  'bullmq-pg',
  // The peers' releases that need Node 22 (systems/node22.ts), after the Node 20 ones.
  'graphile-018-tuned',
  'pgboss12',
] as const;
/**
 * Left out of a full run unless named in `--systems`: pg-boss 10 (polling-bound, 22–108 jobs/s; its
 * users run pg-boss 12 with LISTEN/NOTIFY now, which the full run measures) and BullMQ's PostgreSQL
 * backend (completed jobs cannot be removed there without deadlocks, so it is measured keeping
 * them; it adds minutes to a run and no target row reads it). A quick run still takes them, so CI
 * keeps their adapters working.
 */
export const NAMED_ONLY_SYSTEM_IDS: readonly SystemId[] = ['pgboss', 'bullmq-pg'];
/** The systems that run under the Node 22 binary of bench/node22/ (installed on demand). */
export const NODE22_SYSTEM_IDS: readonly SystemId[] = ['graphile-018-tuned', 'pgboss12'];
/** TaskQ-only configurations of the taskq-features workload (not compared with the peers). */
export const FEATURE_SYSTEM_IDS = [
  'taskq-rl-open',
  'taskq-rl-binding',
  'taskq-reservation',
  'taskq-otel-on',
  'taskq-otel-sampled',
  'taskq-otel-metrics',
  'taskq-otel-off',
] as const;
export type SystemId = (typeof SYSTEM_IDS)[number] | (typeof FEATURE_SYSTEM_IDS)[number];

/** A system that may be named on the command line (`--systems`). */
export function isSystemId(id: string): id is (typeof SYSTEM_IDS)[number] {
  return (SYSTEM_IDS as readonly string[]).includes(id);
}

/** Any system a worker process can run. */
export function isKnownSystem(id: string): id is SystemId {
  return isSystemId(id) || (FEATURE_SYSTEM_IDS as readonly string[]).includes(id);
}

export async function createSystem(id: SystemId): Promise<SystemAdapter> {
  switch (id) {
    case 'taskq':
      return (await import('./taskq.js')).createTaskq('default');
    case 'taskq-tuned':
      return (await import('./taskq.js')).createTaskq('tuned');
    case 'taskq-rl-open':
      return (await import('./taskq.js')).createTaskq('rl-open');
    case 'taskq-rl-binding':
      return (await import('./taskq.js')).createTaskq('rl-binding');
    case 'taskq-reservation':
      return (await import('./taskq.js')).createTaskq('reservation');
    case 'taskq-otel-on':
      return (await import('./taskq.js')).createTaskq('otel-on');
    case 'taskq-otel-sampled':
      return (await import('./taskq.js')).createTaskq('otel-sampled');
    case 'taskq-otel-metrics':
      return (await import('./taskq.js')).createTaskq('otel-metrics');
    case 'taskq-otel-off':
      return (await import('./taskq.js')).createTaskq('otel-off');
    case 'graphile':
      return (await import('./graphile.js')).createGraphile('default');
    case 'graphile-tuned':
      return (await import('./graphile.js')).createGraphile('tuned');
    case 'pgboss':
      return (await import('./pgboss.js')).createPgBoss();
    case 'bullmq-redis':
      return (await import('./bullmq.js')).createBullmq('redis');
    case 'bullmq-pg':
      return (await import('./bullmq.js')).createBullmq('postgres');
    case 'graphile-018-tuned':
    case 'pgboss12':
      return (await import('./node22.js')).createNode22System(id);
  }
}

export async function loadWorkerStarter(id: SystemId): Promise<WorkerStarter> {
  switch (id) {
    case 'taskq':
      return (await import('./taskq.js')).taskqWorkerStarter('default');
    case 'taskq-tuned':
      return (await import('./taskq.js')).taskqWorkerStarter('tuned');
    case 'taskq-rl-open':
      return (await import('./taskq.js')).taskqWorkerStarter('rl-open');
    case 'taskq-rl-binding':
      return (await import('./taskq.js')).taskqWorkerStarter('rl-binding');
    case 'taskq-reservation':
      return (await import('./taskq.js')).taskqWorkerStarter('reservation');
    case 'taskq-otel-on':
      return (await import('./taskq.js')).taskqWorkerStarter('otel-on');
    case 'taskq-otel-sampled':
      return (await import('./taskq.js')).taskqWorkerStarter('otel-sampled');
    case 'taskq-otel-metrics':
      return (await import('./taskq.js')).taskqWorkerStarter('otel-metrics');
    case 'taskq-otel-off':
      return (await import('./taskq.js')).taskqWorkerStarter('otel-off');
    case 'graphile':
      return (await import('./graphile.js')).graphileWorkerStarter('default');
    case 'graphile-tuned':
      return (await import('./graphile.js')).graphileWorkerStarter('tuned');
    case 'pgboss':
      return (await import('./pgboss.js')).pgBossWorkerStarter;
    case 'bullmq-redis':
      return (await import('./bullmq.js')).bullmqWorkerStarter('redis');
    case 'bullmq-pg':
      return (await import('./bullmq.js')).bullmqWorkerStarter('postgres');
    case 'graphile-018-tuned':
    case 'pgboss12':
      return (await import('./node22.js')).node22WorkerStarter(id);
  }
}
