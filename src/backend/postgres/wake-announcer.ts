/**
 * Sends the wake-ups of enqueues that committed without an inline NOTIFY (`afterCommit`, see
 * `EnqueueWake` in pg-enqueue.ts), several enqueues' to one `announce` where it can.
 *
 * What a caller is promised: once `announce()` resolves, a NOTIFY on the wake channel that reached
 * the server after the call has committed, so a worker it woke claims with a snapshot that holds
 * the caller's insert (the insert committed before the call). A wake-up whose statement is already
 * on its way cannot promise that — it may have reached the server before the caller's insert
 * committed — so a caller arriving while one is in flight waits for the next one, which leaves when
 * the one in flight ends; every caller arriving meanwhile shares that next one. At most one
 * announce is in flight and one waits, whatever the number of concurrent enqueues: with 8 callers
 * enqueueing 6,000 jobs/s, a statement and a notification per job had cost the server about as much
 * as the inserts' commits (see docs/performance-log.md, 2026-12-02 from 15:31 UTC).
 *
 * The cost: a caller that arrives just after a wake-up left waits for two round trips of `announce`
 * instead of one, and its wake-up leaves up to one round trip later.
 */
export class WakeAnnouncer {
  private inFlight: Promise<void> | null = null;
  private queued: Promise<void> | null = null;

  /**
   * `send` runs one `announce` statement. The backend's never rejects (a lost wake-up waits for the
   * workers' poll); one that did would fail only the callers sharing that send.
   */
  constructor(private readonly send: () => Promise<void>) {}

  /** Resolves once a wake-up sent after this call has committed (see the class comment). */
  announce(): Promise<void> {
    if (this.queued !== null) return this.queued;
    if (this.inFlight === null) return this.start();
    const sendNext = () => {
      this.queued = null;
      return this.start();
    };
    // Either way: a failed send must not fail the enqueues queued behind it (their inserts committed).
    const next = this.inFlight.then(sendNext, sendNext);
    this.queued = next;
    return next;
  }

  private start(): Promise<void> {
    const sent = this.send().finally(() => {
      if (this.inFlight === sent) this.inFlight = null;
    });
    this.inFlight = sent;
    return sent;
  }
}
