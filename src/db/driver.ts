/**
 * The database seam below the Postgres backend. Two drivers implement it: node-postgres (`pg`) for
 * real servers and PGlite for the embedded development database. The backend only ever talks to
 * an {@link Executor} or a {@link Driver}.
 */

import { copyFromClient, type CopyClient } from './pg-copy.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';

/** Rows and affected-row count of one statement. */
export interface QueryResult<R> {
  rows: R[];
  rowCount: number;
}

/** Anything that runs one statement with bound parameters. */
export interface Executor {
  /**
   * Runs `text` with `$1..$n` bound to `values`. `name`, when given, lets the driver prepare the
   * statement once per connection (node-postgres named statements).
   */
  query<R = Record<string, unknown>>(
    text: string,
    values?: readonly unknown[],
    name?: string,
  ): Promise<QueryResult<R>>;
  /**
   * Streams `data` (COPY text format: lines of tab-separated columns, in chunks of whole lines)
   * into `table`'s `columns` with `COPY … FROM STDIN`, taking each chunk as the stream needs it. Only executors that hold one connection have it (a
   * transaction's, a caller's connection): COPY needs a connection of its own for its duration.
   */
  copyFrom?(table: string, columns: readonly string[], data: Iterable<string>): Promise<void>;
}

/** A connection held for its whole life: LISTEN subscriptions and session-level advisory locks. */
export interface DedicatedConnection extends Executor {
  /** Subscribes to a NOTIFY channel. */
  listen(channel: string, onNotify: (payload: string) => void): Promise<void>;
  /** Drops a subscription. */
  unlisten(channel: string): Promise<void>;
  /** Called once if the connection breaks (server restart, network, terminate_backend). */
  onClose(cb: (err: Error | undefined) => void): void;
  /** Closes the connection. Safe to call twice. */
  close(): Promise<void>;
  /** The server process id of this session (for diagnostics and tests). */
  readonly backendPid: number | null;
}

/** A source of connections: a pool over a server, or the single embedded database. */
export interface Driver extends Executor {
  readonly kind: 'pg' | 'pglite';
  /** Runs `fn` inside BEGIN … COMMIT on one connection; rolls back when it throws. */
  transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T>;
  /** Opens a connection outside the pool (or the shared one, for PGlite). */
  dedicated(options?: { applicationName?: string }): Promise<DedicatedConnection>;
  /** Closes what the driver owns. Caller-provided pools are left open. */
  close(): Promise<void>;
}

/** Minimal shape of a caller's connection (`pg.Client` / `pg.PoolClient`) for `enqueueWithConn`. */
export interface ClientLike {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }>;
}

/** Wraps a caller-owned connection (already inside the caller's transaction) as an Executor. */
export function executorFromClient(client: ClientLike): Executor {
  if (client instanceof Object && 'query' in client && typeof client.query === 'function') {
    return {
      async query<R>(text: string, values?: readonly unknown[]): Promise<QueryResult<R>> {
        const res = await client.query(text, values ? [...values] : undefined);
        return { rows: res.rows as R[], rowCount: res.rowCount ?? 0 };
      },
      copyFrom: (table, columns, data) =>
        copyFromClient(client as unknown as CopyClient, table, columns, data),
    };
  }
  throw new InvalidArgumentError(
    'connection',
    client,
    'must be a connection with a query(text, values) method (pg.Client or pg.PoolClient)',
  );
}
