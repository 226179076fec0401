import type { Backend } from '../backend/backend.js';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../obs/logger.js';

/** Default staleness of the stored `max_pending` snapshot, in ms. */
export const DEFAULT_CAPACITY_CACHE_TTL_MS = 5000;

/**
 * Resolves an actor's effective `maxPending`: a non-null stored `actor_config.max_pending`
 * (operator-owned) wins over the actor literal. The whole table is read at most once per TTL, so
 * the enqueue path pays no extra round trip; an operator change is seen fleet-wide within the TTL.
 * A failed read keeps the previous snapshot (fail-open to the literal when there is none).
 */
export class ActorCapacityCache {
  private snapshot: Map<string, number | null> | null = null;
  private loadedAt = 0;
  private inflight: Promise<void> | null = null;

  constructor(
    private readonly backend: Backend,
    private readonly clock: Clock,
    private readonly ttlMs: number,
    private readonly logger: Logger,
  ) {}

  /** Forces the next lookup to re-read the stored values. */
  invalidate(): void {
    this.snapshot = null;
  }

  async effectiveMaxPending(actor: string, literal: number | null): Promise<number | null> {
    const now = this.clock.monotonic();
    if (this.snapshot === null || now - this.loadedAt >= this.ttlMs) {
      this.inflight ??= this.refresh().finally(() => {
        this.inflight = null;
      });
      await this.inflight;
    }
    const stored = this.snapshot?.get(actor);
    return stored ?? literal;
  }

  private async refresh(): Promise<void> {
    try {
      this.snapshot = await this.backend.getActorMaxPending();
      this.loadedAt = this.clock.monotonic();
    } catch (err) {
      if ((err as { code?: string }).code === 'TASKQ_SCHEMA_NOT_MIGRATED') throw err;
      this.logger.warn({ err }, 'capacity-cache-refresh-failed');
    }
  }
}
