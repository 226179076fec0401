// Types only (erased from the build): the package itself is loaded on first use.
import type { PGlite } from '@electric-sql/pglite';

import { isPackageNotFound, MissingDependencyError } from '../errors/missing-dependency-error.js';
import type { DedicatedConnection, Driver, Executor, QueryResult } from './driver.js';

/** The embedded Postgres package: an optional dependency, loaded by {@link PgliteDriver.open} only. */
export const PGLITE_PACKAGE = '@electric-sql/pglite';

/**
 * What the driver uses of a PGlite instance (`@electric-sql/pglite`). Declared here rather than
 * imported so that TaskQ's published types hold without PGlite installed.
 */
export interface PgliteDatabase {
  query<R>(text: string, params?: unknown[]): Promise<{ rows: R[]; affectedRows?: number }>;
  exec(text: string): Promise<{ rows: unknown[]; affectedRows?: number }[]>;
  transaction<T>(
    fn: (tx: {
      query<R>(
        text: string,
        params?: unknown[],
        options?: { blob?: Blob },
      ): Promise<{ rows: R[]; affectedRows?: number }>;
    }) => Promise<T>,
  ): Promise<T>;
  listen(channel: string, cb: (payload: string) => void): Promise<(() => Promise<void>) | unknown>;
  unlisten(channel: string): Promise<void>;
  close(): Promise<void>;
  readonly closed?: boolean;
}

function toResult<R>(res: { rows: R[]; affectedRows?: number }): QueryResult<R> {
  return { rows: res.rows, rowCount: res.affectedRows ?? res.rows.length };
}

/**
 * PGlite driver: real Postgres compiled to WebAssembly, one connection in-process. PGlite serialises
 * statements and transactions itself; "dedicated" connections share the one session, so session
 * advisory locks always succeed — the single process is always the maintenance leader.
 */
export class PgliteDriver implements Driver {
  readonly kind = 'pglite' as const;
  private readonly db: PgliteDatabase;

  /**
   * @param db an open PGlite instance
   * @param owned close `db` on `close()`. Default true.
   */
  constructor(
    db: PgliteDatabase,
    private readonly owned = true,
  ) {
    this.db = db;
  }

  /**
   * Opens (creating if needed) an embedded database stored in `dataDir`, or in memory when omitted.
   * @throws MissingDependencyError when `@electric-sql/pglite` is not installed
   */
  static async open(dataDir?: string): Promise<PgliteDriver> {
    let PGliteClass: typeof PGlite;
    try {
      ({ PGlite: PGliteClass } = await import('@electric-sql/pglite'));
    } catch (err) {
      if (!isPackageNotFound(err, PGLITE_PACKAGE)) throw err;
      throw new MissingDependencyError(
        PGLITE_PACKAGE,
        'The embedded Postgres (taskq dev and the demo without TASKQ_PG_DSN)',
        `npm install -D ${PGLITE_PACKAGE}`,
        { alternative: 'set TASKQ_PG_DSN to run on a Postgres server', cause: err },
      );
    }
    const db = dataDir ? new PGliteClass(dataDir) : new PGliteClass();
    await db.waitReady;
    return new PgliteDriver(db as unknown as PgliteDatabase, true);
  }

  async query<R>(text: string, values?: readonly unknown[]): Promise<QueryResult<R>> {
    if (!values || values.length === 0) {
      // Parameterless text may hold several statements (migrations); exec runs them all.
      const results = await this.db.exec(text);
      const last = results[results.length - 1];
      return last ? toResult(last as { rows: R[]; affectedRows?: number }) : { rows: [], rowCount: 0 };
    }
    return toResult(await this.db.query<R>(text, [...values]));
  }

  async transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T> {
    return this.db.transaction(async (tx) =>
      fn({
        async query<R>(text: string, values?: readonly unknown[]): Promise<QueryResult<R>> {
          return toResult(await tx.query<R>(text, values ? [...values] : undefined));
        },
        // PGlite has no COPY sub-protocol: it reads COPY data from the blob of the query's options.
        async copyFrom(table, columns, data) {
          await tx.query(`COPY ${table} (${columns.join(', ')}) FROM '/dev/blob'`, [], {
            blob: new Blob([...data]),
          });
        },
      }),
    );
  }

  async dedicated(): Promise<DedicatedConnection> {
    const db = this.db;
    // PGlite's own unlisten(channel) drops every listener of the channel in the process; the
    // unsubscribe function returned by listen() drops only ours.
    const channels = new Map<string, () => Promise<void>>();
    let closed = false;
    return {
      backendPid: null,
      query: (text, values) => this.query(text, values),
      async listen(channel, onNotify) {
        const unsub = await db.listen(channel, onNotify);
        channels.set(
          channel,
          typeof unsub === 'function' ? (unsub as () => Promise<void>) : () => db.unlisten(channel),
        );
      },
      async unlisten(channel) {
        const unsub = channels.get(channel);
        channels.delete(channel);
        if (unsub && !closed) await unsub();
      },
      onClose() {
        // The embedded database only closes with the process.
      },
      async close() {
        if (closed) return;
        closed = true;
        for (const unsub of channels.values()) await unsub().catch(() => undefined);
        channels.clear();
      },
    };
  }

  async close(): Promise<void> {
    if (this.owned && !this.db.closed) await this.db.close();
  }
}
