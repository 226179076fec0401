import { performance } from 'node:perf_hooks';

import type { Backend } from '../../backend/backend.js';
import type { LeaderFence, LeaderSession } from '../../backend/worker-types.js';
import { LeadershipLostError } from '../../errors/leadership-errors.js';
import type { Logger } from '../../obs/logger.js';
import { LoopService } from '../loop-service.js';

/** Why a worker stopped leading (the `reason` of `leader-stepped-down`). */
export type StepDownReason =
  /** Its renewal was refused: the lease expired (it stalled or froze) or another worker took over. */
  | 'lease-lost'
  /** A sweep was refused: the term it carried is no longer current. */
  | 'sweep-refused'
  /** Renewals failed (Postgres unreachable) until the lease this worker last renewed ran out. */
  | 'lease-unconfirmed'
  /** The worker is stopping: it gives the lease up so the next worker takes over at once. */
  | 'stopping';

/**
 * Competes for the maintenance leadership on every heartbeat tick. Leadership is a lease on the
 * backend's clock (`lockLease` long, renewed each tick) with a term, the fence every sweep carries:
 * a leader that stops making progress — killed, frozen, stalled — loses it when the lease expires
 * (at once when its connection dies), another worker takes over with the next term, and whatever the
 * old leader tries afterwards is refused by the backend. The old leader notices at its next renewal
 * or sweep and steps down.
 *
 * Locally, the lease counts from the moment its renewal was sent: once `leaseMs` have passed without
 * a confirmed renewal (the process was frozen, or Postgres did not answer) this worker stops calling
 * itself leader before asking anyone, so a resumed process does not even try a sweep.
 */
export class LeaderElector extends LoopService {
  private session: LeaderSession | null = null;
  private current: LeaderFence | null = null;
  /** Monotonic time until which the current term is surely held. */
  private deadline = 0;
  private readonly listeners: ((leading: boolean) => void)[] = [];

  constructor(
    private readonly backend: Backend,
    private readonly identity: { workerId: string; hostname: string },
    private readonly periodMs: number,
    /** The lease: how long leadership outlives the last renewal (`lockLease`). */
    private readonly leaseMs: number,
    logger: Logger,
    private readonly now: () => number = () => performance.now(),
  ) {
    super('leader-elector', logger);
  }

  /** True while this worker is the maintenance leader. */
  get isLeader(): boolean {
    return this.fence !== null;
  }

  /** The term this worker holds, while it surely holds it; null otherwise. */
  get fence(): LeaderFence | null {
    return this.current !== null && this.now() < this.deadline ? this.current : null;
  }

  /** Called with `true` on election and `false` on loss. */
  onChange(listener: (leading: boolean) => void): void {
    this.listeners.push(listener);
  }

  protected intervalMs(): number {
    return this.periodMs;
  }

  private become(next: LeaderFence | null, reason: StepDownReason): void {
    const prev = this.current;
    if (prev && next?.term === prev.term) return;
    if (prev) {
      this.current = null;
      // Giving the lease up at a clean stop is routine; losing it means this worker stalled or was cut off.
      const log = reason === 'stopping' ? this.logger.info : this.logger.warn;
      log.call(this.logger, { leader: false, term: prev.term, reason }, 'leader-stepped-down');
      for (const l of this.listeners) l(false);
    }
    if (next) {
      this.current = next;
      this.logger.info({ leader: true, term: next.term }, 'leader-elected');
      for (const l of this.listeners) l(true);
    }
  }

  /** One election tick: renew the lease or take a free one. Returns whether this worker leads. */
  async runOnce(): Promise<boolean> {
    this.session ??= await this.backend.openLeaderSession(this.identity.workerId, this.identity.hostname, {
      leaseMs: this.leaseMs,
    });
    const sentAt = this.now();
    try {
      await this.session.tryAcquire();
    } catch (err) {
      // The lease row, not this failed call, decides; past the local deadline nothing vouches for it.
      if (this.current && this.fence === null) this.become(null, 'lease-unconfirmed');
      throw err;
    }
    const next = this.session.fence;
    if (next) this.deadline = sentAt + this.leaseMs;
    this.become(next, 'lease-lost');
    return next !== null;
  }

  /**
   * Runs one leader-only sweep behind the current term. Returns null without running it when this
   * worker does not lead; when the backend refuses the term, steps down and returns null.
   */
  async fenced<T>(sweep: (fence: LeaderFence) => Promise<T>): Promise<T | null> {
    const fence = this.fence;
    if (!fence) return null;
    try {
      return await sweep(fence);
    } catch (err) {
      if (!(err instanceof LeadershipLostError)) throw err;
      if (this.current?.term === fence.term) {
        this.become(null, 'sweep-refused');
        // The next tick lets go of the advisory lock and competes again.
        this.notify();
      }
      return null;
    }
  }

  override async stop(): Promise<void> {
    await super.stop();
    await this.session?.close().catch(() => undefined);
    this.session = null;
    this.become(null, 'stopping');
  }
}
