import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { cronPattern } from './cron-pattern.js';
import { RecentCache } from './recent-cache.js';
import { checkCronSpec, type CronSpec } from './cron-spec.js';
import type { DstStrategy } from './dst-strategy.js';
import { wallTimeInstants } from './wall-time-instants.js';
import { zoneOffsetAt } from './zone-offsets.js';

/** How far back from `after` the smallest nearby offset is looked for (see `nextFireTimes`). */
const WINDOW_MS = 86_400_000;

/**
 * The first `n` fire instants strictly after `after`, in increasing order, per `spec.dstStrategy`.
 *
 * The expression matches WALL-CLOCK time in `spec.timezone`: croner enumerates the matching wall
 * times on a floating clock (UTC offset 0, no DST), and each wall time becomes the instant(s) it
 * denotes in the zone (`wallTimeInstants`):
 * - one instant: it fires then;
 * - two (an overlap, clocks fell back): `skip` and `firstof` fire at the earlier only, `allof` at
 *   both;
 * - none (a gap, clocks jumped forward): `skip` does not fire; `firstof` and `allof` fire at the
 *   instant the clocks jumped (02:30 in New York's spring gap fires at 03:00 EDT), and several slots
 *   in one gap, or a gap slot and the slot at the jump itself, fire once there.
 *
 * With `allof` the instants of successive wall times are not monotonic across an overlap (01:00,
 * 01:15, 01:30, 01:45 in daylight time, then 01:00 again in standard time), so instants are
 * collected, sorted and deduplicated, and enumeration stops only when no later wall time can map
 * before the n-th. It starts at `after`'s wall time read with the smallest offset near `after`, so
 * when `after` lies in the second pass of an overlap, wall times whose second occurrence is still
 * ahead are not missed.
 *
 * Deterministic: depends only on its arguments (never reads a clock). Chaining
 * `next = nextFireAfter(spec, previous)` from a returned instant yields the same sequence, each slot
 * once. Returns fewer than `n` only for an expression that never fires (which `checkCronSpec`
 * refuses).
 *
 * @param spec an expression, and a zone (default `UTC`) and strategy (default `skip`), checked as
 *   `checkCronSpec` checks them.
 * @throws InvalidArgumentError naming `nextFireTimes.spec.<field>` for a bad or unknown field of
 *   `spec`, or when `after` is not a valid Date or `n` not a non-negative integer.
 */
export function nextFireTimes(spec: CronSpecInput, after: Date, n: number): Date[] {
  return fireTimesAfter(checkCronSpec(spec, 'nextFireTimes.spec'), after, n);
}

/**
 * What {@link nextFireTimes} and {@link nextFireAfter} take: a {@link CronSpec} whose zone and
 * strategy may be left out.
 */
export interface CronSpecInput {
  expression: string;
  timezone?: string | null;
  dstStrategy?: DstStrategy | null;
}

/**
 * {@link nextFireTimes} for a spec `checkCronSpec` returned, unchecked: TaskQ's own callers (the
 * leader's tick, a schedule's preview) hold checked specs and call it for every slot.
 */
export function fireTimesAfter(spec: CronSpec, after: Date, n: number): Date[] {
  if (!(after instanceof Date) || Number.isNaN(after.getTime())) {
    throw new InvalidArgumentError('nextFireTimes.after', after, 'must be a valid Date');
  }
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new InvalidArgumentError('nextFireTimes.n', n, 'must be a non-negative integer');
  }
  if (n === 0) return [];
  const { timezone, dstStrategy } = spec;
  const cron = cronPattern(spec.expression);
  const afterMs = after.getTime();
  // A wall time W has instants W - o with o an offset in force near it; one after `afterMs` needs
  // W > afterMs + o, so nothing at or before afterMs + (smallest nearby offset) can fire after it.
  const smallest = Math.min(
    zoneOffsetAt(timezone, afterMs - WINDOW_MS),
    zoneOffsetAt(timezone, afterMs),
    zoneOffsetAt(timezone, afterMs + WINDOW_MS),
  );
  let cursor = new Date(afterMs + smallest);
  const found: number[] = [];
  for (;;) {
    const wall = cron.nextRun(cursor);
    if (wall === null) break;
    const wallMs = wall.getTime();
    const resolved = wallTimeInstants(timezone, wallMs);
    // Every instant of this and later wall times is at or after wall - maxOffset.
    if (found.length >= n && wallMs - resolved.maxOffset >= found[n - 1]!) break;
    let fires: number[];
    if (resolved.jumpedAt !== null) fires = dstStrategy === 'skip' ? [] : [resolved.jumpedAt];
    else if (dstStrategy === 'allof') fires = resolved.instants;
    else fires = resolved.instants.slice(0, 1);
    for (const t of fires) if (t > afterMs) insertSorted(found, t);
    // In steady time the mapping is monotonic: later wall times fire strictly after this one.
    if (resolved.steady && found.length >= n && found[n - 1]! <= resolved.instants[0]!) break;
    if (resolved.jumpedAt !== null) {
      // Every later wall time in this gap maps to the same jump: resume at the gap's end, the wall
      // time the clocks showed at the jump (croner steps whole seconds, strictly after the cursor).
      // (Never behind this wall time, whatever the zone data says: the loop must advance.)
      cursor = new Date(Math.max(wallMs, resolved.jumpedAt + resolved.maxOffset - 1000));
    } else {
      cursor = wall;
    }
  }
  return found.slice(0, n).map((t) => new Date(t));
}

/**
 * The next fire instant strictly after `after`: `nextFireTimes(spec, after, 1)[0]`. Chained from
 * the previous fire time (not from now), as the leader advances a schedule from its stored slot, it
 * never drifts and yields every slot once. Recent answers are remembered per (spec, `after`).
 *
 * @throws InvalidArgumentError naming `nextFireAfter.spec.<field>` for a bad or unknown field of
 *   `spec`, or when `after` is not a valid Date.
 */
export function nextFireAfter(specInput: CronSpecInput, after: Date): Date {
  const spec = checkCronSpec(specInput, 'nextFireAfter.spec');
  const afterMs = after instanceof Date ? after.getTime() : Number.NaN;
  const key = `${afterMs}\u0000${spec.dstStrategy}\u0000${spec.timezone}\u0000${spec.expression}`;
  const cached = recentNext.get(key);
  if (cached !== undefined) return new Date(cached);
  // A checked expression has a slot after any instant (cron fields repeat every year); the throw
  // below guards croner, not the input.
  const [next] = fireTimesAfter(spec, after, 1);
  if (!next) throw new Error(`cron expression ${JSON.stringify(spec.expression)} never fires`);
  recentNext.set(key, next.getTime());
  return next;
}

/**
 * Recent answers of `nextFireAfter`, by spec and `after`. The answer depends only on those, and
 * schedules that share an expression and zone were usually due at the same stored instant (every
 * `0 * * * *` schedule in a zone fired at the same hour), so a leader's tick computes each distinct
 * (spec, fire time) once.
 */
const recentNext = new RecentCache<string, number>(10_000);

/** Inserts `t` into ascending `list` unless already present (lists stay short: n + a few). */
function insertSorted(list: number[], t: number): void {
  let i = list.length;
  while (i > 0 && list[i - 1]! > t) i--;
  if (i > 0 && list[i - 1] === t) return;
  list.splice(i, 0, t);
}
