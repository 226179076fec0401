import type { Logger } from '../obs/logger.js';

/**
 * A warning logged at most once per interval: a Redis outage makes every progress publish fail,
 * and one line per failure would flood the log. The line carries how many were suppressed since.
 */
export class RateLimitedWarning {
  private lastAt = -Infinity;
  private suppressed = 0;

  constructor(
    private readonly logger: Logger,
    private readonly event: string,
    private readonly intervalMs: number,
  ) {}

  /** Logs now, or counts the occurrence for the next line. */
  warn(fields: Record<string, unknown>): void {
    const now = performance.now();
    if (now - this.lastAt < this.intervalMs) {
      this.suppressed++;
      return;
    }
    this.lastAt = now;
    this.logger.warn({ ...fields, suppressed: this.suppressed }, this.event);
    this.suppressed = 0;
  }
}
