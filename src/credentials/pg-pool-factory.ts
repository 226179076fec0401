import pg from 'pg';

import { toMs, type Duration } from '../core/duration.js';
import { checkInt } from '../core/text-checks.js';
import { checkKnownKeys } from '../core/closest-name.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { pgClientConfig } from '../db/pg-driver.js';
import type { PgCredentialProvider } from './credential-types.js';
import { pgCredentialConfig } from './pg-credential-config.js';

/** Builds a `pg.Pool` (a new one each call); TaskQ owns what it returns. */
export type PgPoolFactory = () => Promise<pg.Pool>;

/** Opens a connected `pg.Client`; the caller ends it. */
export type PgConnFactory = () => Promise<pg.Client>;

/** Options of {@link makeDedicatedConnFactory} (and of {@link makePgPoolFactory}'s connections). */
export interface PgConnectionOptions {
  /** `application_name` reported to the server (unless the DSN sets one). Default: none. */
  applicationName?: string;
  /** Server-side `statement_timeout` (the client gives up 1 s later). Default: none. */
  statementTimeout?: Duration;
  /** Run-time settings of every connection (`-c name=value` startup options), e.g. `{ jit: 'off' }`. */
  sessionSettings?: Readonly<Record<string, string>>;
}

/** The keys of {@link PgConnectionOptions}: any other is refused, not ignored. */
const CONNECTION_OPTION_KEYS: readonly string[] = ['applicationName', 'statementTimeout', 'sessionSettings'];

/** Options of {@link makePgPoolFactory}. */
export interface PgPoolFactoryOptions extends PgConnectionOptions {
  /** Connections the pool keeps even when idle. Default 1. */
  minSize?: number;
  /** Connections at most. Default 4. */
  maxSize?: number;
  /** An idle connection above `minSize` closes after this long. Default `'5m'`. */
  idleTimeout?: Duration;
}

/** The keys of {@link PgPoolFactoryOptions}: the connection options and the pool's own. */
const POOL_FACTORY_OPTION_KEYS: readonly string[] = [
  ...CONNECTION_OPTION_KEYS,
  'minSize',
  'maxSize',
  'idleTimeout',
];

/** Refuses options that are not an object or name a key not in `known` (`maxPoolSize` for `maxSize`). */
function checkOptions(options: unknown, known: readonly string[], field: string): void {
  if (options === null || typeof options !== 'object')
    throw new InvalidArgumentError(`${field}.options`, options, 'must be an object');
  checkKnownKeys(options, known, field, `an option of ${field}()`);
}

function connectionOptions(o: PgConnectionOptions, field: string) {
  return {
    ...(o.applicationName !== undefined ? { applicationName: o.applicationName } : {}),
    ...(o.statementTimeout !== undefined
      ? { statementTimeoutMs: toMs(o.statementTimeout, `${field}.statementTimeout`, 'positive') }
      : {}),
    ...(o.sessionSettings !== undefined ? { sessionSettings: o.sessionSettings } : {}),
  };
}

/**
 * A pool factory whose connections authenticate through `provider`, never with a password in the
 * DSN. Each call fetches a credential once (to pin the user — node-postgres takes it once per pool
 * — and to fail fast on a broken provider), then builds a pool whose password is a function
 * node-postgres calls for every physical connection it opens, so new connections always use a
 * current credential. `sslmode=require` is added unless the DSN sets a mode. Pass it as
 * `TaskQ.open({ poolFactory })`; a credential reload calls it again.
 */
export function makePgPoolFactory(
  dsn: string,
  provider: PgCredentialProvider,
  options: PgPoolFactoryOptions = {},
): PgPoolFactory {
  const field = 'makePgPoolFactory';
  checkOptions(options, POOL_FACTORY_OPTION_KEYS, field);
  const max = checkInt(options.maxSize ?? 4, `${field}.maxSize`, 1, 10_000);
  const min = checkInt(options.minSize ?? 1, `${field}.minSize`, 0, max);
  const idleTimeoutMillis = toMs(options.idleTimeout ?? '5m', `${field}.idleTimeout`, 'positive');
  const build = connectionOptions(options, field);
  return async () => {
    const config = pgClientConfig(await pgCredentialConfig(dsn, provider, 'pool'), build);
    const pool = new pg.Pool({ ...config, min, max, idleTimeoutMillis });
    // An idle client that errors (server restart) must not crash the process; the pool drops it.
    pool.on('error', () => undefined);
    return pool;
  };
}

/**
 * A factory of single connections (LISTEN, session locks) authenticated through `provider`: each
 * call fetches a credential and returns a connected `pg.Client`; every reconnect a caller makes by
 * calling it again authenticates afresh. `sslmode=require` is added unless the DSN sets a mode.
 */
export function makeDedicatedConnFactory(
  dsn: string,
  provider: PgCredentialProvider,
  options: PgConnectionOptions = {},
): PgConnFactory {
  checkOptions(options, CONNECTION_OPTION_KEYS, 'makeDedicatedConnFactory');
  const build = connectionOptions(options, 'makeDedicatedConnFactory');
  return async () => {
    const config = pgClientConfig(await pgCredentialConfig(dsn, provider, 'dedicated connection'), build);
    const client = new pg.Client({ ...config, keepAlive: true });
    // An error on an idle connection (server restart) must not crash the process; the next query fails.
    client.on('error', () => undefined);
    await client.connect();
    return client;
  };
}
