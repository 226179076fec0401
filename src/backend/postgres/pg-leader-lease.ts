/**
 * The maintenance leader's lease on Postgres (`sql/leader.sql`): the election session, the lease as
 * it stands, and the fence every leader-only sweep runs behind.
 */
import type { DedicatedConnection, Driver, Executor } from '../../db/driver.js';
import { InvalidArgumentError } from '../../errors/invalid-argument-error.js';
import { LeadershipLostError } from '../../errors/leadership-errors.js';
import { checkLeaderLeaseMs } from '../leader-lease.js';
import type { LeaderFence, LeaderLease, LeaderSession } from '../worker-types.js';
import { PgAnnouncer, type Announcement } from './pg-announcer.js';
import type { PgOps, StatementName } from './pg-ops.js';

/** A fence's term, checked before it reaches a `bigint` parameter. */
function checkFence(fence: LeaderFence): LeaderFence {
  if (typeof fence.term !== 'string' || !/^[0-9]{1,18}$/.test(fence.term))
    throw new InvalidArgumentError('fence.term', fence.term, 'must be a term a leader session returned');
  return fence;
}

/**
 * A leadership session over a dedicated connection. Each `tryAcquire` (one election tick):
 *
 * 1. tries the session-level advisory lock, unless this session holds it already;
 * 2. while holding a term, renews it (`renewLeaderLease`); a refusal means the lease was lost;
 * 3. without a term, takes the lease when it is free (`takeOverLeaderLease`) with a new term;
 * 4. a session that does not lead lets go of the advisory lock, so that the holder can take it.
 *
 * The advisory lock only speeds a takeover up: Postgres frees it the moment the holder's connection
 * dies, and a lease whose holder held it is free as soon as another session obtains it. A holder
 * that is alive but frozen keeps its connection and its lock, and loses the lease when it expires.
 */
export async function openLeaderSession(
  ops: PgOps,
  workerId: string,
  hostname: string,
  leaseMs: number,
): Promise<LeaderSession> {
  checkLeaderLeaseMs(leaseMs);
  const key = `taskq:maintenance_leader:${ops.schema}`;
  let conn: DedicatedConnection | null = null;
  let locked = false;
  let fence: LeaderFence | null = null;
  const dropConnection = (): void => {
    conn = null;
    locked = false;
  };
  const run = async <R>(c: DedicatedConnection, name: StatementName, values: unknown[]): Promise<R[]> =>
    (await c.query<R>(ops.sql[name], values)).rows;
  const connect = async (): Promise<DedicatedConnection> => {
    if (conn) return conn;
    const c = await ops.driver.dedicated({ applicationName: `taskq-leader:${workerId.slice(-12)}` });
    c.onClose(() => {
      if (conn === c) dropConnection();
    });
    conn = c;
    await run(c, 'ensureLeaderRow', []);
    return c;
  };
  const unlock = async (c: DedicatedConnection): Promise<void> => {
    if (!locked) return;
    locked = false;
    await run(c, 'releaseLeaderLock', [key]);
  };
  const session: LeaderSession = {
    get held() {
      return fence !== null;
    },
    get fence() {
      return fence;
    },
    tryAcquire: async () => {
      try {
        const c = await connect();
        if (!locked)
          locked = (await run<{ acquired: boolean }>(c, 'tryLeaderLock', [key]))[0]?.acquired === true;
        if (fence) {
          const renewed = await run(c, 'renewLeaderLease', [workerId, fence.term, leaseMs, locked]);
          if (renewed.length === 0) fence = null;
        }
        if (!fence) {
          const taken = await run<{ term: string }>(c, 'takeOverLeaderLease', [
            workerId,
            hostname,
            leaseMs,
            locked,
          ]);
          fence = taken[0] ? { workerId, term: taken[0].term } : null;
        }
        if (!fence) await unlock(c);
        return fence !== null;
      } catch (err) {
        // The connection (and with it the advisory lock) is gone or unusable: start over on the next
        // tick. The term is kept: the lease row, not this connection, says whether it still holds.
        const c = conn;
        dropConnection();
        await c?.close().catch(() => undefined);
        throw ops.translate(err);
      }
    },
    release: async () => {
      const held = fence;
      fence = null;
      const c = conn;
      if (!c) return;
      try {
        if (held) await run(c, 'releaseLeaderLease', [held.workerId, held.term]);
        await unlock(c);
      } catch (err) {
        dropConnection();
        await c.close().catch(() => undefined);
        throw ops.translate(err);
      }
    },
    close: async () => {
      await session.release().catch(() => undefined);
      const c = conn;
      dropConnection();
      await c?.close().catch(() => undefined);
    },
  };
  return session;
}

/** The lease as it stands (null before any worker ever led). */
export async function readLeaderLease(ops: PgOps): Promise<LeaderLease | null> {
  const rows = await ops.run<{
    worker_id: string;
    hostname: string | null;
    term: string;
    acquired_at: Date;
    last_seen_at: Date;
    expires_at: Date;
    valid: boolean;
  }>('readLeaderLease', []);
  const r = rows[0];
  if (!r) return null;
  return {
    workerId: r.worker_id,
    hostname: r.hostname,
    term: r.term,
    acquiredAt: r.acquired_at,
    renewedAt: r.last_seen_at,
    expiresAt: r.expires_at,
    valid: r.valid,
  };
}

/** Announcements held back until the fenced transaction that made them has committed. */
class DeferredAnnouncer extends PgAnnouncer {
  private readonly held: Announcement[] = [];

  override send(a: Announcement): Promise<void> {
    this.held.push(a);
    return Promise.resolve();
  }

  /** Sends what was held, through `to`. */
  async flush(to: PgAnnouncer): Promise<void> {
    for (const a of this.held.splice(0)) await to.send(a);
  }
}

/** `ops` with every statement running on `tx` (the fenced transaction's connection). */
export function opsOn(ops: PgOps, tx: Executor): PgOps {
  const refuse = (): Promise<never> =>
    Promise.reject(new Error('a fenced sweep runs on its transaction’s connection only'));
  const driver: Driver = {
    kind: ops.driver.kind,
    query: (text, values, name) => tx.query(text, values, name),
    transaction: refuse,
    dedicated: refuse,
    close: async () => undefined,
  };
  return { ...ops, driver, run: (name, values, ex) => ops.run(name, values, ex ?? tx) };
}

/**
 * Runs one sweep behind `fence`: in a transaction whose first statement (`lockLeaderTerm`) checks
 * that the term is current and unexpired and holds the lease row against a takeover until the sweep
 * commits. A stale term throws {@link LeadershipLostError} before the sweep ran. Without a fence
 * the sweep runs as it is (callers outside a worker: tests, tools). Announcements of the sweep go
 * out after the commit, as they do unfenced.
 */
export async function fenced<T>(
  ops: PgOps,
  announcer: PgAnnouncer,
  fence: LeaderFence | undefined,
  sweep: (ops: PgOps, announcer: PgAnnouncer) => Promise<T>,
): Promise<T> {
  if (!fence) return sweep(ops, announcer);
  const { workerId, term } = checkFence(fence);
  const deferred = new DeferredAnnouncer(ops, ops.logger);
  const out = await ops.driver.transaction(async (tx) => {
    const rows = await ops.run('lockLeaderTerm', [workerId, term], tx);
    if (rows.length === 0) throw new LeadershipLostError(workerId, term);
    return sweep(opsOn(ops, tx), deferred);
  });
  await deferred.flush(announcer);
  return out;
}

/**
 * Runs `work` in one transaction: behind `fence` (its term checked and held first, as in
 * {@link fenced}), or as a plain transaction without one. Unlike a sweep, the work gets the
 * transaction's executor too (statements of other modules run on it).
 */
export async function fencedTransaction<T>(
  ops: PgOps,
  fence: LeaderFence | undefined,
  work: (ops: PgOps, tx: Executor) => Promise<T>,
): Promise<T> {
  return ops.driver.transaction(async (tx) => {
    if (fence) {
      const { workerId, term } = checkFence(fence);
      const rows = await ops.run('lockLeaderTerm', [workerId, term], tx);
      if (rows.length === 0) throw new LeadershipLostError(workerId, term);
    }
    return work(opsOn(ops, tx), tx);
  });
}
