import type pg from 'pg';

import { validateConnectionString } from '../db/connection-string.js';
import type { Driver } from '../db/driver.js';
import { PgDriver } from '../db/pg-driver.js';
import { PoolFactoryReload } from '../credentials/pool-factory-reload.js';
import {
  PINNED_PLAN_SESSION_SETTINGS,
  TASKQ_SESSION_SETTINGS,
  WORKER_SESSION_SETTINGS,
} from '../db/session-settings.js';
import type { PgCredentialProvider } from '../credentials/credential-types.js';
import { pgCredentialConfig } from '../credentials/pg-credential-config.js';
import { PgDriverReload } from '../credentials/pg-driver-reload.js';
import type { ReloadableResource } from '../credentials/reloadable-resource.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import type { Logger } from '../obs/logger.js';
import { validateSchemaName } from '../core/schema-name.js';
import type { Backend } from './backend.js';
import { PostgresBackend } from './postgres/postgres-backend.js';

/**
 * Where a backend's Postgres connections come from: exactly one of a connection string, your own
 * pool, a pool factory, or a ready driver (the embedded PGlite driver, for one).
 */
export interface ConnectionSource {
  /** Connection string; TaskQ builds and owns the pools. */
  dsn?: string;
  /** Your own `pg.Pool`; TaskQ never closes it. */
  pool?: pg.Pool;
  /** Builds a pool (e.g. with rotating credentials); the pool is TaskQ-owned. */
  poolFactory?: () => Promise<pg.Pool>;
  /** A ready driver; TaskQ-owned. */
  driver?: Driver;
}

/** Options of {@link openClientBackend}. */
export interface ClientBackendOptions extends ConnectionSource {
  /** Schema holding TaskQ's tables. Default `taskq`. */
  schema?: string;
  /** Size of the pool built from `dsn`. Default 5. */
  maxPoolSize?: number;
  /** Logger for the backend's warnings. */
  logger?: Logger;
  /** Name of the options in error messages. Default `TaskQ.open`. */
  field?: string;
}

/** The pools of a worker, sized and timed by its settings. */
export interface WorkerPoolSettings {
  /** Schema holding TaskQ's tables. */
  schema: string;
  /** Dispatcher pool size (claims' bookkeeping, sweeps, rate limits). */
  dispatcherPoolSize: number;
  /** Statement timeout of the dispatcher, claim and settle connections, in ms. */
  dispatcherCommandTimeoutMs: number;
  /** Heartbeat pool size (lease renewals, cancel polls). */
  heartbeatPoolSize: number;
  /** Statement timeout of the heartbeat connections, in ms. */
  heartbeatCommandTimeoutMs: number;
}

/** Options of {@link openWorkerBackend}. */
export interface WorkerBackendOptions {
  /** Connection string of the worker's pools (the direct one, bypassing a pooler, when there is one). */
  dsn?: string | null;
  /** A ready driver instead (the embedded PGlite driver): every role shares it. */
  driver?: Driver;
  /** Pool sizes, timeouts and schema. */
  settings: WorkerPoolSettings;
  /** Claims in flight at most: one claim connection each. */
  claimConnections: number;
  /** Outcome writes in flight at most: one settle connection each. */
  settleConnections: number;
  /** Logger for the backend's warnings. */
  logger?: Logger;
}

/** The one source given, or an error naming what was given. */
function pickSource(o: ConnectionSource, field: string): keyof ConnectionSource {
  const given = (['dsn', 'pool', 'poolFactory', 'driver'] as const).filter(
    (k) => o[k] !== undefined && o[k] !== null,
  );
  if (given.length !== 1) {
    throw new InvalidArgumentError(
      field,
      given.join(', ') || 'none',
      'give exactly one of dsn, pool, poolFactory or driver',
    );
  }
  return given[0]!;
}

const checkDsn = (dsn: unknown, field: string): string => validateConnectionString(dsn, field);

/**
 * The backend of a client (`TaskQ.open`, the CLI): Postgres over one pool. Every option is checked
 * before anything connects; connections are made lazily, on the first call that needs one.
 */
export async function openClientBackend(o: ClientBackendOptions): Promise<Backend> {
  return (await openReloadableClientBackend(o)).backend;
}

/**
 * {@link openClientBackend}, with what a credential reload rebuilds: the pool of a `poolFactory`
 * source (rebuilt through the factory and swapped in); nothing for the other sources.
 */
export async function openReloadableClientBackend(
  o: ClientBackendOptions,
): Promise<{ backend: Backend; reloadables: ReloadableResource[] }> {
  const field = o.field ?? 'TaskQ.open';
  if (o === null || typeof o !== 'object')
    throw new InvalidArgumentError(field, o, 'options must be an object');
  const source = pickSource(o, field);
  const schema = validateSchemaName(o.schema ?? 'taskq', `${field}.schema`);
  let driver: Driver;
  const reloadables: ReloadableResource[] = [];
  switch (source) {
    case 'driver':
      driver = o.driver!;
      break;
    case 'pool':
      driver = new PgDriver({ pool: o.pool! });
      break;
    case 'poolFactory': {
      if (typeof o.poolFactory !== 'function')
        throw new InvalidArgumentError(
          `${field}.poolFactory`,
          o.poolFactory,
          'must be a function returning a pg.Pool',
        );
      const pooled = new PgDriver({ pool: await o.poolFactory(), ownPool: true });
      reloadables.push(new PoolFactoryReload(pooled, o.poolFactory, o.logger));
      driver = pooled;
      break;
    }
    case 'dsn':
      driver = new PgDriver({
        connection: checkDsn(o.dsn, `${field}.dsn`),
        maxPoolSize: o.maxPoolSize ?? 5,
        applicationName: 'taskq',
        sessionSettings: TASKQ_SESSION_SETTINGS,
      });
      break;
  }
  return {
    backend: new PostgresBackend(driver, { schema, ...(o.logger ? { logger: o.logger } : {}) }),
    reloadables,
  };
}

/** Options of {@link openCredentialedWorkerBackend}. */
export interface CredentialedWorkerBackendOptions extends Omit<WorkerBackendOptions, 'driver'> {
  /** Authenticates every pool and dedicated connection of the worker. */
  pgCredentialProvider: PgCredentialProvider;
}

/** A worker backend whose pools a credential reload rebuilds. */
export interface CredentialedWorkerBackend {
  /** The backend (the worker owns it). */
  backend: Backend;
  /** One reloadable per pool: dispatcher, heartbeat, claim, settle. */
  reloadables: ReloadableResource[];
}

/** One pool of a worker: its application name, size, statement timeout and session settings. */
interface WorkerPool {
  name: string;
  size: number;
  timeoutMs: number;
  settings: Readonly<Record<string, string>>;
}

/** The four pools of a worker: dispatcher (also the dedicated connections), heartbeat, claim, settle. */
function workerPools(
  o: Omit<WorkerBackendOptions, 'driver'>,
): [WorkerPool, WorkerPool, WorkerPool, WorkerPool] {
  const s = o.settings;
  return [
    {
      name: 'taskq-worker',
      size: s.dispatcherPoolSize,
      timeoutMs: s.dispatcherCommandTimeoutMs,
      settings: WORKER_SESSION_SETTINGS,
    },
    {
      name: 'taskq-heartbeat',
      size: s.heartbeatPoolSize,
      timeoutMs: s.heartbeatCommandTimeoutMs,
      settings: WORKER_SESSION_SETTINGS,
    },
    {
      name: 'taskq-claim',
      size: o.claimConnections,
      timeoutMs: s.dispatcherCommandTimeoutMs,
      settings: PINNED_PLAN_SESSION_SETTINGS,
    },
    {
      name: 'taskq-settle',
      size: o.settleConnections,
      timeoutMs: s.dispatcherCommandTimeoutMs,
      settings: PINNED_PLAN_SESSION_SETTINGS,
    },
  ];
}

function workerBackend(
  o: Omit<WorkerBackendOptions, 'driver'>,
  [main, heartbeat, claim, settle]: [PgDriver, PgDriver, PgDriver, PgDriver],
): Backend {
  return new PostgresBackend(main, {
    schema: o.settings.schema,
    ...(o.logger ? { logger: o.logger } : {}),
    heartbeatDriver: heartbeat,
    claimDriver: claim,
    claimConnections: o.claimConnections,
    settleDriver: settle,
    settleConnections: o.settleConnections,
  });
}

/**
 * The backend of a worker. From a DSN: four pools — the dispatcher's, the heartbeat's (so liveness
 * writes never queue behind dispatch), and one connection per claim and per outcome write in
 * flight, each statement planned once on it (`PINNED_PLAN_SESSION_SETTINGS`). From a driver: every
 * role on that driver. The backend owns what it builds; `close()` releases it.
 */
export function openWorkerBackend(o: WorkerBackendOptions): Backend {
  const s = o.settings;
  if (o.driver)
    return new PostgresBackend(o.driver, { schema: s.schema, ...(o.logger ? { logger: o.logger } : {}) });
  const dsn = checkDsn(o.dsn, 'pgDsn');
  const drivers = workerPools(o).map(
    (p) =>
      new PgDriver({
        connection: dsn,
        maxPoolSize: p.size,
        applicationName: p.name,
        statementTimeoutMs: p.timeoutMs,
        sessionSettings: p.settings,
      }),
  ) as [PgDriver, PgDriver, PgDriver, PgDriver];
  return workerBackend(o, drivers);
}

/**
 * The backend of a worker whose connections authenticate through a credential provider: the same
 * four pools as {@link openWorkerBackend}, each built from the provider (one fetch per pool, which
 * pins the user and fails fast on a broken provider; then one per physical connection), and each a
 * {@link ReloadableResource} the worker's credential reload rebuilds. The LISTEN and leader
 * connections are opened from the dispatcher pool's config, so each (re)connect authenticates
 * afresh; a reload does not close them (see docs/credentials.md).
 */
export async function openCredentialedWorkerBackend(
  o: CredentialedWorkerBackendOptions,
): Promise<CredentialedWorkerBackend> {
  const dsn = checkDsn(o.dsn, 'pgDsn');
  const provider = o.pgCredentialProvider;
  const pools = workerPools(o);
  const drivers: PgDriver[] = [];
  const reloadables: ReloadableResource[] = [];
  try {
    for (const p of pools) {
      const driver = new PgDriver({
        connection: await pgCredentialConfig(dsn, provider, 'pool'),
        maxPoolSize: p.size,
        applicationName: p.name,
        statementTimeoutMs: p.timeoutMs,
        sessionSettings: p.settings,
      });
      drivers.push(driver);
      reloadables.push(new PgDriverReload(driver, dsn, provider, p.name, o.logger));
    }
  } catch (err) {
    for (const d of drivers) await d.close().catch(() => undefined);
    throw err;
  }
  return {
    backend: workerBackend(o, drivers as [PgDriver, PgDriver, PgDriver, PgDriver]),
    reloadables,
  };
}
