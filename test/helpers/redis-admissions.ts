/**
 * Token-bucket admissions as Redis made them. A handler's own start time trails its admission by
 * however long its process waited for the CPU, which on a loaded machine is longer than a token's
 * worth; the bucket script stamps every admission with the Redis clock, and MONITOR shows it.
 */
import type { Redis } from 'ioredis';
import { expect } from 'vitest';

import { testRedis } from '../ratelimit/helpers.js';

/** Admission instants (µs, Redis clock) per bucket key, collected until `stop()`. */
export interface AdmissionWatch {
  /** Bucket key → admission instants, in the order Redis made them. */
  readonly byKey: Map<string, number[]>;
  /** The sorted admissions of the one key ending in `suffix` (empty when none was seen). */
  of(suffix: string): number[];
  stop(): void;
}

/**
 * Watches Redis run the token-bucket script for keys containing `keyPart`. An admission is the
 * script's only write in `acquire` mode (`HSET key tokens … ts <now µs>`; a denial writes nothing,
 * a refund runs in `refund` mode). MONITOR prints a script's inner commands right after the call
 * that ran it, so the call's mode is the one seen last.
 */
export async function watchAdmissions(keyPart: string): Promise<AdmissionWatch> {
  const client: Redis = testRedis();
  const monitor = await client.monitor();
  const byKey = new Map<string, number[]>();
  let lastMode: string | undefined;
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    const command = args[0]?.toLowerCase();
    if (source !== 'lua' && (command === 'evalsha' || command === 'eval')) lastMode = args[4];
    else if (source === 'lua' && command === 'hset' && args[1]?.includes(keyPart) && lastMode === 'acquire') {
      const at = Number(args[args.indexOf('ts') + 1]);
      byKey.set(args[1], [...(byKey.get(args[1]) ?? []), at]);
    }
  });
  return {
    byKey,
    of: (suffix) => {
      const key = [...byKey.keys()].find((k) => k.endsWith(suffix));
      return [...(key === undefined ? [] : byKey.get(key)!)].sort((a, b) => a - b);
    },
    stop: () => {
      monitor.disconnect();
      client.disconnect();
    },
  };
}

/** Any stretch of T seconds of `admissions` (µs, sorted) holds at most capacity + refill × T. */
export function expectWithinBucket(
  admissions: number[],
  bucket: { capacity: number; refillPerSecond: number },
): void {
  for (let i = 0; i < admissions.length; i++) {
    for (let j = i; j < admissions.length; j++) {
      const t = (admissions[j]! - admissions[i]!) / 1e6;
      // The script's float arithmetic is exact to far below a microsecond's worth of tokens.
      expect(j - i + 1).toBeLessThanOrEqual(bucket.capacity + bucket.refillPerSecond * t + 1e-6);
    }
  }
}
