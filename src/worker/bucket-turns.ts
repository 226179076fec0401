import { interruptibleSleep } from './sleep.js';

/**
 * Turns, one at a time per rate limit, for the jobs of one worker waiting on that limit: the first
 * to queue goes first, the next once it has ended its turn. Jobs parked on a limit would otherwise
 * all probe it at the next token, and all but one be denied again.
 */
export class BucketTurns {
  /** Per limit, the promise that resolves when the last job queued on it has ended its turn. */
  private readonly tails = new Map<string, Promise<void>>();

  /**
   * Queues for a turn on `bucket`. Resolves, once every job queued before has ended its turn, to
   * the function that ends this one; or to null, having given up the place in the queue, when
   * `untilMs` (a `performance.now()` time) passes or `signal` aborts first.
   */
  take(bucket: string, untilMs: number, signal?: AbortSignal): Promise<(() => void) | null> {
    const prev = this.tails.get(bucket);
    let end!: () => void;
    const mine = new Promise<void>((resolve) => (end = resolve));
    const tail = prev ? prev.then(() => mine) : mine;
    this.tails.set(bucket, tail);
    const finish = (): void => {
      end();
      if (this.tails.get(bucket) === tail) this.tails.delete(bucket);
    };
    if (!prev) return Promise.resolve(finish);
    return new Promise((resolve) => {
      let settled = false;
      const timer = interruptibleSleep(untilMs - performance.now(), signal);
      void prev.then(() => {
        if (settled) return;
        settled = true;
        timer.wake();
        resolve(finish);
      });
      void timer.promise.then(() => {
        if (settled) return;
        settled = true;
        // Giving up ends this turn before it starts: the jobs behind go when the ones ahead are done.
        finish();
        resolve(null);
      });
    });
  }

  /** Limits with jobs queued or holding a turn now (for tests). */
  get busy(): number {
    return this.tails.size;
  }
}
