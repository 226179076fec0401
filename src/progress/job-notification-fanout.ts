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

/**
 * One LISTEN (progress and done channels) per backend, shared by every job stream of the process:
 * opened with the first listener, closed with the last, so a thousand streams hold one Postgres
 * connection and a process with no stream holds none. NOTIFY only wakes streams; they read the
 * row for the truth.
 */
export class JobNotificationFanout {
  private static readonly byBackend = new WeakMap<Backend, JobNotificationFanout>();

  /** The fan-out of a backend (made on first use). */
  static of(backend: Backend, logger: Logger): JobNotificationFanout {
    let f = JobNotificationFanout.byBackend.get(backend);
    if (!f) JobNotificationFanout.byBackend.set(backend, (f = new JobNotificationFanout(backend, logger)));
    return f;
  }

  private sub: Promise<NotificationSubscription | null> | null = null;
  private live = false;
  private lastAttempt = -Infinity;
  private readonly listeners = new Map<string, Set<JobNotificationListener>>();
  private count = 0;

  private constructor(
    private readonly backend: Backend,
    private readonly logger: Logger,
  ) {}

  /** True while the subscription is open. */
  get isLive(): boolean {
    return this.live;
  }

  /** Listeners registered (for tests). */
  get listenerCount(): number {
    return this.count;
  }

  /** Registers a listener of one job; returns its release (closes the LISTEN after the last one). */
  add(jobId: string, listener: JobNotificationListener): () => Promise<void> {
    const id = jobId.toLowerCase();
    let set = this.listeners.get(id);
    if (!set) this.listeners.set(id, (set = new Set()));
    set.add(listener);
    this.count++;
    let released = false;
    return async () => {
      if (released) return;
      released = true;
      set.delete(listener);
      if (set.size === 0 && this.listeners.get(id) === set) this.listeners.delete(id);
      this.count--;
      if (this.count > 0) return;
      const sub = this.sub;
      this.sub = null;
      this.live = false;
      this.lastAttempt = -Infinity;
      const s = await sub;
      await s?.close().catch(() => undefined);
    };
  }

  /**
   * Opens the subscription unless it is open or being opened (at most one attempt per second after
   * a failure). Resolves true once it is live. Never throws: without it, streams poll.
   */
  ensure(): Promise<boolean> {
    if (this.count === 0) return Promise.resolve(false);
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

  private fan(ids: readonly string[] | '*', fn: (l: JobNotificationListener) => void): void {
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
