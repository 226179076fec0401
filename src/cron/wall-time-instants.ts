import { zoneOffsetAt } from './zone-offsets.js';

/** How far either side of a wall time the candidate offsets are read (more than any offset, ±14 h). */
const WINDOW_MS = 86_400_000;

/** What one wall-clock time denotes in a zone. */
export interface WallTimeInstants {
  /** The instants (ms) it denotes, earlier first: one normally, two in an overlap, none in a gap. */
  instants: number[];
  /** In a gap: the instant the clocks jumped over it (the first instant after the gap); else null. */
  jumpedAt: number | null;
  /** The largest offset near the wall time: no instant of it lies before `wall - maxOffset`. */
  maxOffset: number;
  /** True when the zone keeps one offset from a day before to a day after the wall time. */
  steady: boolean;
}

/**
 * The instant(s) a wall-clock time (given as milliseconds of a floating clock: the wall time read
 * as if it were UTC) denotes in `timezone`.
 *
 * The candidate offsets are the zone's offsets a day before and a day after the wall time; an
 * instant `wall - o` is real when the zone's offset at that instant is `o`. None real: the wall time
 * falls in a gap (clocks jumped forward over it); two: an overlap (clocks fell back and showed it
 * twice). Assumes at most one transition within a day of the wall time.
 */
export function wallTimeInstants(timezone: string, wallMs: number): WallTimeInstants {
  const early = zoneOffsetAt(timezone, wallMs - WINDOW_MS);
  const late = zoneOffsetAt(timezone, wallMs + WINDOW_MS);
  if (early === late) {
    const instant = wallMs - early;
    // Also check the instant itself: a transition and its reversal within the window would show
    // the same offset on both sides.
    if (zoneOffsetAt(timezone, instant) === early) {
      return { instants: [instant], jumpedAt: null, maxOffset: early, steady: true };
    }
  }
  const low = Math.min(early, late);
  const high = Math.max(early, late);
  const instants: number[] = [];
  // The larger offset gives the earlier instant.
  if (zoneOffsetAt(timezone, wallMs - high) === high) instants.push(wallMs - high);
  if (low !== high && zoneOffsetAt(timezone, wallMs - low) === low) instants.push(wallMs - low);
  if (instants.length > 0) return { instants, jumpedAt: null, maxOffset: high, steady: false };
  return {
    instants,
    jumpedAt: jumpInstant(timezone, wallMs - high, wallMs - low),
    maxOffset: high,
    steady: false,
  };
}

/**
 * The first instant in `(lo, hi]` whose offset differs from `lo`'s: the moment the clocks jumped.
 * `zoneOffsetAt` is cached, so bisecting to the millisecond costs map reads, not `Intl` calls.
 */
function jumpInstant(timezone: string, lo: number, hi: number): number {
  const before = zoneOffsetAt(timezone, lo);
  while (hi - lo > 1) {
    const mid = lo + Math.floor((hi - lo) / 2);
    if (zoneOffsetAt(timezone, mid) === before) lo = mid;
    else hi = mid;
  }
  return hi;
}
