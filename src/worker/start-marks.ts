/**
 * Most `markStarted` writes in flight at once. While one is in flight, the jobs whose slots free up
 * wait for the next, which takes all of them: one statement for every job starting at the same time,
 * and never more statements than round trips.
 */
export const MAX_START_MARKS_IN_FLIGHT = 1;

/**
 * Batches the writes that record jobs of the local queue as started (`Backend.markStarted`), the
 * way a group commit does: {@link add} sends at once while fewer than
 * {@link MAX_START_MARKS_IN_FLIGHT} writes are in flight, and otherwise adds the jobs to the next
 * write, sent as soon as one returns. `write` handles its own failures (it must not reject).
 */
export class StartMarks<T> {
  private waiting: T[] = [];
  private inFlight = 0;

  constructor(
    private readonly write: (batch: T[]) => Promise<void>,
    private readonly maxInFlight = MAX_START_MARKS_IN_FLIGHT,
  ) {}

  /** Jobs whose handlers are to start once their start is recorded. */
  add(jobs: readonly T[]): void {
    for (const j of jobs) this.waiting.push(j);
    this.flush();
  }

  private flush(): void {
    while (this.inFlight < this.maxInFlight && this.waiting.length > 0) {
      const batch = this.waiting;
      this.waiting = [];
      this.inFlight++;
      void this.write(batch).finally(() => {
        this.inFlight--;
        this.flush();
      });
    }
  }
}
