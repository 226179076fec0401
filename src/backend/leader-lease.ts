/** What both backends share about the maintenance leader's lease. */
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';

/** The lease a leader session takes when not told otherwise (`lockLease`'s default). */
export const DEFAULT_LEADER_LEASE_MS = 60_000;

/** The lease duration, checked: a positive whole number of milliseconds. */
export function checkLeaderLeaseMs(leaseMs: unknown): number {
  if (typeof leaseMs !== 'number' || !Number.isSafeInteger(leaseMs) || leaseMs <= 0)
    throw new InvalidArgumentError(
      'openLeaderSession.leaseMs',
      leaseMs,
      'must be a positive whole number of milliseconds',
    );
  return leaseMs;
}
