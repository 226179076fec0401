import type pg from 'pg';

import { validateConnectionString } from '../db/connection-string.js';
import type { Driver } from '../db/driver.js';
import { PgDriver } from '../db/pg-driver.js';
import {
  PINNED_PLAN_SESSION_SETTINGS,
  TASKQ_SESSION_SETTINGS,
  WORKER_SESSION_SETTINGS,
} from '../db/session-settings.js';
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
  const field = o.field ?? 'TaskQ.open';
  if (o === null || typeof o !== 'object')
    throw new InvalidArgumentError(field, o, 'options must be an object');
  const source = pickSource(o, field);
  const schema = validateSchemaName(o.schema ?? 'taskq', `${field}.schema`);
  let driver: Driver;
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
      driver = new PgDriver({ pool: await o.poolFactory(), ownPool: true });
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
  return new PostgresBackend(driver, { schema, ...(o.logger ? { logger: o.logger } : {}) });
}

/**
 * The backend of a worker. From a DSN: four pools — the dispatcher's, the heartbeat's (so liveness
 * writes never queue behind dispatch), and one connection per claim and per outcome write in
 * flight, each statement planned once on it (`PINNED_PLAN_SESSION_SETTINGS`). From a driver: every
 * role on that driver. The backend owns what it builds; `close()` releases it.
 */
export function openWorkerBackend(o: WorkerBackendOptions): Backend {
  const s = o.settings;
  const logger = o.logger ? { logger: o.logger } : {};
  if (o.driver) return new PostgresBackend(o.driver, { schema: s.schema, ...logger });
  const dsn = checkDsn(o.dsn, 'pgDsn');
  const pool = (name: string, size: number, timeoutMs: number, settings: Record<string, string>) =>
    new PgDriver({
      connection: dsn,
      maxPoolSize: size,
      applicationName: name,
      statementTimeoutMs: timeoutMs,
      sessionSettings: settings,
    });
  return new PostgresBackend(
    pool('taskq-worker', s.dispatcherPoolSize, s.dispatcherCommandTimeoutMs, WORKER_SESSION_SETTINGS),
    {
      schema: s.schema,
      ...logger,
      heartbeatDriver: pool(
        'taskq-heartbeat',
        s.heartbeatPoolSize,
        s.heartbeatCommandTimeoutMs,
        WORKER_SESSION_SETTINGS,
      ),
      claimDriver: pool(
        'taskq-claim',
        o.claimConnections,
        s.dispatcherCommandTimeoutMs,
        PINNED_PLAN_SESSION_SETTINGS,
      ),
      claimConnections: o.claimConnections,
      settleDriver: pool(
        'taskq-settle',
        o.settleConnections,
        s.dispatcherCommandTimeoutMs,
        PINNED_PLAN_SESSION_SETTINGS,
      ),
      settleConnections: o.settleConnections,
    },
  );
}
