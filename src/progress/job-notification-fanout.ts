import type { AnnouncedIds } from '../backend/announcements.js';
import type { Backend } from '../backend/backend.js';
import type { NotificationSubscription } from '../backend/worker-types.js';
import type { Logger } from '../obs/logger.js';

/** What a job's listener is told. */
export interface JobNotificationListener {
  /** The job's progress was written. */
  onProgress(): void;
  /** The job reached a terminal status. */
  onDone(): void;
  /** The subscription broke: nothing is announced until it is made again. */
  onLost(): void;
}

/** Least time between two attempts to (re)open the subscription. */
const RETRY_MS = 1000;

/** How long the subscription stays open after its last listener left. */
export const DEFAULT_LISTEN_LINGER_MS = 2000;

/**
 * One LISTEN (progress and done channels) per client, shared by every wait and stream of that
 * client: opened with the first listener and closed a while after the last one left (so a loop of
 * `wait()` calls reuses one connection, and an idle process holds none). NOTIFY only wakes
 * listeners; they read the row for the truth.
 */
export class JobNotificationFanout {
  private sub: Promise<NotificationSubscription | null> | null = null;
  private live = false;
  private lastAttempt = -Infinity;
  private readonly listeners = new Map<string, Set<JobNotificationListener>>();
  private count = 0;
  private lingerTimer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly backend: Backend,
    private readonly logger: Logger,
    private readonly lingerMs = DEFAULT_LISTEN_LINGER_MS,
  ) {}

  /** True while the subscription is open. */
  get isLive(): boolean {
    return this.live;
  }

  /** Listeners registered (for tests). */
  get listenerCount(): number {
    return this.count;
  }

  /**
   * Registers a listener of one job; returns its release. The LISTEN closes `lingerMs` after the
   * last listener left, unless another arrives meanwhile.
   */
  add(jobId: string, listener: JobNotificationListener): () => Promise<void> {
    const id = jobId.toLowerCase();
    let set = this.listeners.get(id);
    if (!set) this.listeners.set(id, (set = new Set()));
    set.add(listener);
    this.count++;
    if (this.lingerTimer) clearTimeout(this.lingerTimer);
    this.lingerTimer = null;
    let released = false;
    return async () => {
      if (released) return;
      released = true;
      set.delete(listener);
      if (set.size === 0 && this.listeners.get(id) === set) this.listeners.delete(id);
      this.count--;
      if (this.count > 0) return;
      if (this.lingerMs <= 0 || this.closed) return this.closeSubscription();
      this.lingerTimer = setTimeout(() => {
        this.lingerTimer = null;
        if (this.count === 0) void this.closeSubscription();
      }, this.lingerMs);
      // A lingering LISTEN must not keep the process alive.
      this.lingerTimer.unref();
    };
  }

  /** Closes the subscription now; later listeners open a new one (unless {@link close}d). */
  private async closeSubscription(): Promise<void> {
    const sub = this.sub;
    this.sub = null;
    this.live = false;
    this.lastAttempt = -Infinity;
    const s = await sub;
    await s?.close().catch(() => undefined);
  }

  /** Closes the subscription for good (the client is closing); listeners then rely on polling. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.lingerTimer) clearTimeout(this.lingerTimer);
    this.lingerTimer = null;
    await this.closeSubscription();
  }

  /**
   * Opens the subscription unless it is open or being opened (at most one attempt per second after
   * a failure). Resolves true once it is live. Never throws: without it, streams poll.
   */
  ensure(): Promise<boolean> {
    if (this.count === 0 || this.closed) return Promise.resolve(false);
    if (this.sub) return this.sub.then((s) => s !== null);
    const now = performance.now();
    if (now - this.lastAttempt < RETRY_MS) return Promise.resolve(false);
    this.lastAttempt = now;
    const attempt: Promise<NotificationSubscription | null> = this.backend
      .subscribe({
        onProgress: (ids) => this.fan(ids, (l) => l.onProgress()),
        onDone: (ids) => this.fan(ids, (l) => l.onDone()),
      })
      .then(async (s) => {
        if (this.sub !== attempt) {
          // Released (or replaced) while connecting.
          await s.close().catch(() => undefined);
          return null;
        }
        this.live = true;
        s.onClose((err) => {
          if (this.sub !== attempt) return;
          this.sub = null;
          this.live = false;
          this.logger.debug({ err }, 'job-stream-listen-lost');
          this.fan('*', (l) => l.onLost());
        });
        return s;
      })
      .catch((err: unknown) => {
        if (this.sub === attempt) this.sub = null;
        this.logger.debug({ err }, 'job-stream-listen-unavailable');
        return null;
      });
    this.sub = attempt;
    return attempt.then((s) => s !== null);
  }

  private fan(ids: AnnouncedIds, fn: (l: JobNotificationListener) => void): void {
    const sets =
      ids === '*'
        ? [...this.listeners.values()]
        : ids.map((id) => this.listeners.get(id.toLowerCase())).filter((s) => s !== undefined);
    for (const set of sets) {
      for (const l of [...set]) {
        try {
          fn(l);
        } catch (err) {
          this.logger.warn({ err }, 'job-stream-listener-failed');
        }
      }
    }
  }
}
