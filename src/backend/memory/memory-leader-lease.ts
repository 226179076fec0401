/**
 * The in-memory backend's maintenance leader lease, mirroring `postgres/sql/leader.sql` on the
 * backend's injected clock: one lease (holder, term, expiry), renewed by its holder, free once
 * expired or released, and the fence every leader-only sweep checks.
 */
import type { Clock } from '../../core/clock.js';
import { LeadershipLostError } from '../../errors/leadership-errors.js';
import { checkLeaderLeaseMs } from '../leader-lease.js';
import type { LeaderFence, LeaderLease, LeaderSession } from '../worker-types.js';

interface StoredLease {
  workerId: string;
  hostname: string | null;
  term: bigint;
  acquiredAt: number;
  renewedAt: number;
  expiresAt: number;
}

/** The lease of one in-memory backend. */
export class MemoryLeaderLease {
  private lease: StoredLease | null = null;
  /** The last term handed out: terms never repeat, even across {@link clear}. */
  private lastTerm = 0n;

  constructor(private readonly clock: Clock) {}

  private valid(l: StoredLease | null): l is StoredLease {
    return l !== null && l.expiresAt > this.clock.now().getTime();
  }

  /** Forgets the lease (as if no worker ever led). Sessions holding a term lose it. */
  clear(): void {
    this.lastTerm = this.lease?.term ?? this.lastTerm;
    this.lease = null;
  }

  /** The lease as it stands (null before anyone led). */
  read(): LeaderLease | null {
    const l = this.lease;
    if (!l) return null;
    return {
      workerId: l.workerId,
      hostname: l.hostname,
      term: l.term.toString(),
      acquiredAt: new Date(l.acquiredAt),
      renewedAt: new Date(l.renewedAt),
      expiresAt: new Date(l.expiresAt),
      valid: this.valid(l),
    };
  }

  /**
   * Throws {@link LeadershipLostError} unless `fence` is the current, unexpired term (the in-memory
   * backend runs each sweep synchronously after this check, so nothing takes over mid-sweep).
   */
  check(fence: LeaderFence | undefined): void {
    if (!fence) return;
    const l = this.lease;
    if (!this.valid(l) || l.workerId !== fence.workerId || l.term.toString() !== fence.term)
      throw new LeadershipLostError(fence.workerId, fence.term);
  }

  /** A session competing for the lease (see `LeaderSession`). */
  open(workerId: string, hostname: string, leaseMs: number): LeaderSession {
    checkLeaderLeaseMs(leaseMs);
    let fence: LeaderFence | null = null;
    const session: LeaderSession = {
      get held() {
        return fence !== null;
      },
      get fence() {
        return fence;
      },
      tryAcquire: async () => {
        const now = this.clock.now().getTime();
        const l = this.lease;
        if (fence && this.valid(l) && l.workerId === workerId && l.term.toString() === fence.term) {
          l.renewedAt = now;
          l.expiresAt = now + leaseMs;
          return true;
        }
        fence = null;
        if (!this.valid(l) || l.workerId === workerId) {
          const term = (l?.term ?? this.lastTerm) + 1n;
          this.lease = {
            workerId,
            hostname,
            term,
            acquiredAt: now,
            renewedAt: now,
            expiresAt: now + leaseMs,
          };
          fence = { workerId, term: term.toString() };
        }
        return fence !== null;
      },
      release: async () => {
        const held = fence;
        fence = null;
        const l = this.lease;
        if (held && this.valid(l) && l.workerId === held.workerId && l.term.toString() === held.term)
          l.expiresAt = this.clock.now().getTime();
      },
      close: () => session.release(),
    };
    return session;
  }
}
