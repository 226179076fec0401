import type { WatchdogTrip } from './watchdog-trip.js';

/**
 * Detector 3, the sibling contract: the worker's service loops are long-lived and end only when
 * the worker stops them. A loop that ends while the worker is not stopping (an error escaped its
 * pass and its error handling) leaves the worker half alive — claiming with no heartbeat, or
 * heartbeating with no leader loops. The violation is counted, logged critical and dumped, and the
 * worker is torn down (`onViolation`: a graceful stop that exits 2), so its jobs are drained and
 * released instead of waiting for their leases; the shutdown deadline bounds that teardown.
 */
export class SiblingContract {
  private broken = false;

  constructor(
    private readonly trip: WatchdogTrip,
    /** True once the worker is shutting down: loops ending then keep the contract. */
    private readonly isStopping: () => boolean,
    /** Tears the worker down (called once). */
    private readonly onViolation: (reason: string) => void,
  ) {}

  /** A loop ended without being stopped. Returns true when that broke the contract. */
  ended(loop: string, err: unknown): boolean {
    if (this.isStopping()) return false;
    const reason = `loop ${loop} ended while the worker was running`;
    this.trip.report('sibling-contract', reason, { loop, error: describeError(err) });
    if (!this.broken) {
      this.broken = true;
      this.onViolation(reason);
    }
    return true;
  }
}

function describeError(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}
