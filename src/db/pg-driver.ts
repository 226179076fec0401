import { untilAborted } from '../core/until-aborted.js';
import pg from 'pg';

import { maskConnectionString, pgConnectionSettings } from './connection-string.js';
import { connectionErrorOf } from './connection-failure.js';
import type { DedicatedConnection, Driver, Executor, QueryResult } from './driver.js';
import { copyFromClient } from './pg-copy.js';
import { TaskQStateError } from '../errors/client-errors.js';
import { checkKnownKeys } from '../core/closest-name.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';

/**
 * How to reach a Postgres server: a connection string (a `postgres://` URL or libpq key=value
 * pairs, checked by `validateConnectionString`) or node-postgres client config.
 */
export type PgConnectionConfig = string | pg.ClientConfig;

/** Options of {@link PgDriver}. */
export interface PgDriverOptions {
  /** Existing pool. Caller-owned (never closed by TaskQ) unless `ownPool` is true. */
  pool?: pg.Pool;
  /** The driver closes `pool` on `close()` (pools built by a factory for TaskQ). Default false. */
  ownPool?: boolean;
  /** Connection string or config: TaskQ builds and owns a pool. */
  connection?: PgConnectionConfig;
  /** Pool size when TaskQ builds the pool. Default 5. */
  maxPoolSize?: number;
  /** Application name reported to the server. */
  applicationName?: string;
  /** Server-side `statement_timeout` (and client-side query timeout, 1 s later) for pool connections. */
  statementTimeoutMs?: number;
  /**
   * Run-time settings for every connection TaskQ opens (`-c name=value` startup options), e.g.
   * `{ jit: 'off' }`. Ignored for a caller-owned pool.
   */
  sessionSettings?: Readonly<Record<string, string>>;
}

/** The keys of {@link PgDriverOptions}: any other is refused (a misspelt `maxPoolSize` is not ignored). */
const PG_DRIVER_OPTION_KEYS: readonly string[] = [
  'pool',
  'ownPool',
  'connection',
  'maxPoolSize',
  'applicationName',
  'statementTimeoutMs',
  'sessionSettings',
];

function toConfig(connection: PgConnectionConfig): pg.ClientConfig {
  return typeof connection === 'string'
    ? (pgConnectionSettings(connection, 'PgDriver.connection') as pg.ClientConfig)
    : { ...connection };
}

/** The server a config points at, for connection errors: never with its password. */
function describeTarget(config: pg.ClientConfig | undefined): string {
  if (config === undefined) return 'the server of the given pool';
  if (typeof config.connectionString === 'string') return maskConnectionString(config.connectionString);
  const db = config.database ? `/${config.database}` : '';
  return `${config.host ?? 'localhost'}:${config.port ?? 5432}${db}`;
}

class PgDedicatedConnection implements DedicatedConnection {
  private readonly handlers = new Map<string, (payload: string) => void>();
  private closed = false;
  private closeCallbacks: ((err: Error | undefined) => void)[] = [];

  constructor(
    private readonly client: pg.Client,
    readonly backendPid: number | null,
    private readonly release: (err?: Error) => void,
  ) {
    client.on('notification', (msg) => {
      this.handlers.get(msg.channel)?.(msg.payload ?? '');
    });
    const onGone = (err?: Error): void => {
      if (this.closed) return;
      this.closed = true;
      for (const cb of this.closeCallbacks) cb(err);
      this.closeCallbacks = [];
    };
    client.on('error', (err) => onGone(err));
    client.on('end', () => onGone(undefined));
  }

  async query<R>(text: string, values?: readonly unknown[]): Promise<QueryResult<R>> {
    const res = await this.client.query(text, values ? [...values] : undefined);
    return { rows: res.rows as R[], rowCount: res.rowCount ?? 0 };
  }

  async listen(channel: string, onNotify: (payload: string) => void): Promise<void> {
    this.handlers.set(channel, onNotify);
    await this.client.query(`LISTEN "${channel}"`);
  }

  async unlisten(channel: string): Promise<void> {
    this.handlers.delete(channel);
    if (!this.closed) await this.client.query(`UNLISTEN "${channel}"`);
  }

  onClose(cb: (err: Error | undefined) => void): void {
    if (this.closed) cb(undefined);
    else this.closeCallbacks.push(cb);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.closeCallbacks = [];
    this.release();
  }
}

/** The connection options of a pool TaskQ builds: everything of {@link PgDriverOptions} but the source. */
type BuildOptions = Pick<
  PgDriverOptions,
  'maxPoolSize' | 'applicationName' | 'statementTimeoutMs' | 'sessionSettings'
>;

/**
 * The node-postgres config of a pool or client TaskQ builds over `connection`: the application
 * name, statement timeout and session settings applied.
 */
export function pgClientConfig(connection: PgConnectionConfig, options: BuildOptions = {}): pg.ClientConfig {
  const config = { ...toConfig(connection) };
  if (options.applicationName && !config.application_name) config.application_name = options.applicationName;
  if (options.statementTimeoutMs !== undefined) {
    config.statement_timeout = options.statementTimeoutMs;
    // The client gives up a second later, in case the server cannot even answer.
    config.query_timeout = options.statementTimeoutMs + 1000;
  }
  const settings = Object.entries(options.sessionSettings ?? {});
  if (settings.length > 0) {
    const extra = settings.map(([k, v]) => `-c ${k}=${v}`).join(' ');
    config.options = config.options ? `${config.options} ${extra}` : extra;
  }
  return config;
}

/**
 * Ends `pool` once nobody needs it: first every caller already queued for one of its connections is
 * served (`pool.end()` would strand them), then `end()` waits for the checked-out clients to be
 * released and closes every connection.
 */
export async function drainPool(pool: pg.Pool): Promise<void> {
  while (pool.waitingCount > 0) {
    // Waiters leave the queue as clients are released or connections fail; no event covers both.
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await pool.end();
}

/** node-postgres driver: a pool for statements, plain clients for dedicated connections. */
export class PgDriver implements Driver {
  readonly kind = 'pg' as const;
  private current: pg.Pool;
  private readonly owned: boolean;
  private config: pg.ClientConfig | null;
  private readonly buildOptions: BuildOptions;
  /** Old pools ending after a swap; `close()` waits for them. */
  private readonly draining = new Set<Promise<void>>();
  /** The server, as connection errors name it. */
  private readonly target: string;

  constructor(options: PgDriverOptions) {
    // Checked before a pool is built: nothing connects on refused options.
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError(
        'PgDriver.options',
        options,
        'must be an object ({ pool } or { connection })',
      );
    checkKnownKeys(options, PG_DRIVER_OPTION_KEYS, 'PgDriver', 'an option of new PgDriver()');
    this.buildOptions = {
      ...(options.maxPoolSize !== undefined ? { maxPoolSize: options.maxPoolSize } : {}),
      ...(options.applicationName !== undefined ? { applicationName: options.applicationName } : {}),
      ...(options.statementTimeoutMs !== undefined ? { statementTimeoutMs: options.statementTimeoutMs } : {}),
      ...(options.sessionSettings !== undefined ? { sessionSettings: options.sessionSettings } : {}),
    };
    if (options.pool) {
      this.current = options.pool;
      this.owned = options.ownPool ?? false;
      this.config = null;
      this.target = describeTarget((options.pool as { options?: pg.ClientConfig }).options);
    } else if (options.connection !== undefined) {
      this.config = pgClientConfig(options.connection, this.buildOptions);
      this.target =
        typeof options.connection === 'string'
          ? maskConnectionString(options.connection.trim())
          : describeTarget(this.config);
      this.current = this.newPool(this.config);
      this.owned = true;
    } else {
      throw new TypeError('PgDriver needs a pool or a connection');
    }
  }

  /** The pool statements run on now (a credential reload replaces it). */
  get pool(): pg.Pool {
    return this.current;
  }

  private newPool(config: pg.ClientConfig): pg.Pool {
    const pool = new pg.Pool({ ...config, max: this.buildOptions.maxPoolSize ?? 5 });
    // An idle client that errors (server restart) must not crash the process; the pool drops it.
    pool.on('error', () => undefined);
    return pool;
  }

  /**
   * Rebuilds the pool over `connection` (a config carrying fresh credentials) with this driver's
   * size, timeouts and session settings; see {@link PgDriver.replacePool}.
   */
  async rebuild(connection: PgConnectionConfig, signal?: AbortSignal): Promise<{ drained: Promise<void> }> {
    const config = pgClientConfig(connection, this.buildOptions);
    return this.replacePool(this.newPool(config), { config, signal });
  }

  /**
   * Swaps `pool` in for the current one, atomically for every caller: statements that start after
   * the swap use it, those running finish on the old pool. The new pool must connect once first (a
   * wrong credential fails here, leaving the old pool serving and ending the new one). `config`, when
   * given, is what later dedicated connections are opened with. The old pool then drains in the
   * background (`drained`): queued callers are served, checked-out clients released, connections
   * closed. Only a pool the driver owns can be replaced.
   * @throws TaskQStateError for a caller-owned pool; the connect error, or `signal`'s reason
   */
  async replacePool(
    pool: pg.Pool,
    options: { config?: pg.ClientConfig; signal?: AbortSignal | undefined } = {},
  ): Promise<{ drained: Promise<void> }> {
    if (!this.owned) {
      await pool.end().catch(() => undefined);
      throw new TaskQStateError(
        'this driver runs on a caller-owned pool: TaskQ never replaces or closes it; rotate that pool yourself',
      );
    }
    try {
      const connecting = pool.connect();
      const client = await untilAborted(connecting, options.signal).catch((err: unknown) => {
        // A connection that arrives after the abort goes back to the pool, which is then ended.
        void connecting.then((c) => c.release()).catch(() => undefined);
        throw err;
      });
      client.release();
    } catch (err) {
      void pool.end().catch(() => undefined);
      throw connectionErrorOf(err, this.target) ?? err;
    }
    const old = this.current;
    this.current = pool;
    if (options.config) this.config = options.config;
    const drained = drainPool(old).finally(() => this.draining.delete(drained));
    this.draining.add(drained);
    return { drained };
  }

  async query<R>(text: string, values?: readonly unknown[], name?: string): Promise<QueryResult<R>> {
    try {
      const res = name
        ? await this.pool.query({ name, text, values: values ? [...values] : undefined })
        : await this.pool.query(text, values ? [...values] : undefined);
      return { rows: res.rows as R[], rowCount: res.rowCount ?? 0 };
    } catch (err) {
      // pool.query connects when the pool has no idle connection: a failure to connect becomes a
      // ConnectionError; a failure of the statement itself passes through.
      throw connectionErrorOf(err, this.target) ?? err;
    }
  }

  /** Connects `connect()`'s way, turning a failure to connect into a ConnectionError. */
  private async connecting<C>(connect: () => Promise<C>): Promise<C> {
    try {
      return await connect();
    } catch (err) {
      throw connectionErrorOf(err, this.target) ?? err;
    }
  }

  async transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T> {
    const client = await this.connecting(() => this.pool.connect());
    let broken: Error | undefined;
    // The pool drops its error listener while a client is checked out: a server that ends the
    // session between two statements (a fast shutdown, pg_terminate_backend) would otherwise raise
    // an unhandled 'error' and end the process. The next statement fails instead.
    const onError = (err: Error): void => {
      broken ??= err;
    };
    client.on('error', onError);
    try {
      await client.query('BEGIN');
      const tx: Executor = {
        async query<R>(text: string, values?: readonly unknown[], name?: string): Promise<QueryResult<R>> {
          const res = name
            ? await client.query({ name, text, values: values ? [...values] : undefined })
            : await client.query(text, values ? [...values] : undefined);
          return { rows: res.rows as R[], rowCount: res.rowCount ?? 0 };
        },
        copyFrom: (table, columns, data) => copyFromClient(client, table, columns, data),
      };
      const out = await fn(tx);
      await client.query('COMMIT');
      return out;
    } catch (err) {
      try {
        await client.query('ROLLBACK');
      } catch (rollbackErr) {
        // The connection is unusable (it died mid-transaction): do not return it to the pool.
        broken = rollbackErr as Error;
      }
      throw err;
    } finally {
      client.off('error', onError);
      client.release(broken);
    }
  }

  async dedicated(options: { applicationName?: string } = {}): Promise<DedicatedConnection> {
    if (this.config) {
      const appName = options.applicationName ?? this.config.application_name;
      const client = new pg.Client({
        ...this.config,
        keepAlive: true,
        ...(appName ? { application_name: appName } : {}),
      });
      client.on('error', () => undefined);
      await this.connecting(() => client.connect());
      const pid = (client as unknown as { processID?: number }).processID ?? null;
      return new PgDedicatedConnection(client, pid, () => {
        void client.end().catch(() => undefined);
      });
    }
    // A caller-owned pool gives us no way to open a fresh client: hold one of its connections.
    const client = await this.connecting(() => this.pool.connect());
    const pid = (client as unknown as { processID?: number }).processID ?? null;
    return new PgDedicatedConnection(client, pid, (err) => client.release(err ?? true));
  }

  async close(): Promise<void> {
    if (this.owned) await this.current.end();
    await Promise.allSettled([...this.draining]);
  }
}
