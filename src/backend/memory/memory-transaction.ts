import type { ClientLike } from '../../db/driver.js';
import { InvalidArgumentError } from '../../errors/invalid-argument-error.js';

/**
 * A stand-in for a caller's database transaction when the in-memory backend is used:
 * `enqueueWithConn(tx, …)` buffers the job, `commit()` makes it visible, `rollback()` drops it —
 * the same observable behaviour as a Postgres transaction for TaskQ's writes.
 */
export class MemoryTransaction implements ClientLike {
  private pending: (() => void)[] = [];
  private endHooks: (() => void)[] = [];
  private state: 'open' | 'committed' | 'rolledBack' = 'open';

  /** Not a SQL connection: calling `query` is a mistake in a test using the in-memory backend. */
  async query(): Promise<{ rows: unknown[]; rowCount: number | null }> {
    throw new InvalidArgumentError(
      'connection',
      this,
      'is a MemoryTransaction, which runs no SQL: it only scopes the in-memory backend’s enqueues (give a Postgres backend a pg.Client or pg.PoolClient)',
    );
  }

  /** Registers work to apply at commit. */
  defer(apply: () => void): void {
    if (this.state !== 'open') throw new TypeError(`transaction already ${this.state}`);
    this.pending.push(apply);
  }

  /** Registers work to run when the transaction ends, committed or rolled back (releasing its gate locks). */
  onEnd(fn: () => void): void {
    if (this.state !== 'open') throw new TypeError(`transaction already ${this.state}`);
    this.endHooks.push(fn);
  }

  private end(): void {
    const hooks = this.endHooks;
    this.endHooks = [];
    for (const fn of hooks) fn();
  }

  /** True while neither committed nor rolled back. */
  get isOpen(): boolean {
    return this.state === 'open';
  }

  /** Applies the buffered writes. */
  async commit(): Promise<void> {
    if (this.state !== 'open') throw new TypeError(`transaction already ${this.state}`);
    this.state = 'committed';
    for (const apply of this.pending) apply();
    this.pending = [];
    this.end();
  }

  /** Drops the buffered writes. */
  async rollback(): Promise<void> {
    if (this.state !== 'open') throw new TypeError(`transaction already ${this.state}`);
    this.state = 'rolledBack';
    this.pending = [];
    this.end();
  }
}

/** The caller's transaction of an enqueue with `connection` (none without); anything else is refused. */
export function transactionOf(conn: ClientLike | undefined, method: string): MemoryTransaction | undefined {
  if (conn !== undefined && !(conn instanceof MemoryTransaction))
    throw new InvalidArgumentError(
      `InMemoryBackend.${method}.connection`,
      conn,
      'must be a MemoryTransaction from backend.beginTransaction() (the in-memory backend has no SQL connections)',
    );
  return conn;
}
