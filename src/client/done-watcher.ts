import type { Backend } from '../backend/backend.js';
import type { NotificationSubscription } from '../backend/worker-types.js';
import type { Logger } from '../obs/logger.js';

/**
 * Shared wake-up source for `JobHandle.wait()`: one subscription per client to the backend's
 * "jobs done" announcements, fanned out to the waiters of each job. If the subscription cannot be
 * made (or drops), waiters fall back to polling; polling is always the source of truth.
 */
export class DoneWatcher {
  private sub: Promise<NotificationSubscription | null> | null = null;
  private readonly waiters = new Map<string, Set<() => void>>();
  private closed = false;

  constructor(
    private readonly backend: Backend,
    private readonly logger: Logger,
  ) {}

  /** True once a live subscription exists (waiters may then poll slowly). */
  async ensure(): Promise<boolean> {
    if (this.closed) return false;
    this.sub ??= this.backend
      .subscribe({
        onDone: (ids) => {
          if (ids === '*') {
            for (const set of this.waiters.values()) for (const wake of set) wake();
            return;
          }
          for (const id of ids) for (const wake of this.waiters.get(id) ?? []) wake();
        },
      })
      .then((s) => {
        s.onClose(() => {
          this.sub = null;
        });
        return s;
      })
      .catch((err: unknown) => {
        this.logger.debug({ err }, 'done-watcher-unavailable');
        this.sub = null;
        return null;
      });
    return (await this.sub) !== null;
  }

  /** Registers a wake-up for one job; returns the unregister function. */
  watch(jobId: string, wake: () => void): () => void {
    let set = this.waiters.get(jobId);
    if (!set) this.waiters.set(jobId, (set = new Set()));
    set.add(wake);
    return () => {
      set.delete(wake);
      if (set.size === 0) this.waiters.delete(jobId);
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    const sub = await this.sub;
    this.sub = null;
    await sub?.close().catch(() => undefined);
  }
}
