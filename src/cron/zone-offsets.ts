import { RecentCache } from './recent-cache.js';

/** Milliseconds in a UTC day: the span of one cached slice of a zone's offset history. */
const DAY_MS = 86_400_000;

/** Slices kept per zone (see RecentCache): years of days, far more than a leader touches. */
const SLICES_PER_ZONE = 4096;

/**
 * The offsets of one UTC day `[start, start + DAY_MS)` of one zone: `before` from the start, and,
 * when the offset at the day's end differs, `after` from the instant `at` on.
 */
interface DaySlice {
  before: number;
  after: number;
  at: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();
const slices = new Map<string, RecentCache<number, DaySlice>>();

function formatterFor(timezone: string): Intl.DateTimeFormat {
  let f = formatters.get(timezone);
  if (!f) {
    // h23: never "24" for midnight (hour12: false gives "24" on some ICU versions).
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: timezone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timezone, f);
  }
  return f;
}

/**
 * Asks `Intl` for the offset at one instant: the zone's wall clock read as if it were UTC, minus the
 * instant. Both are whole seconds (`Intl` shows seconds, so offsets with seconds, such as local mean
 * times before standard time, come out exact).
 */
function probeOffset(timezone: string, instantMs: number): number {
  const second = Math.floor(instantMs / 1000) * 1000;
  let year = 0;
  let month = 1;
  let day = 1;
  let hour = 0;
  let minute = 0;
  let sec = 0;
  for (const part of formatterFor(timezone).formatToParts(second)) {
    switch (part.type) {
      case 'year':
        year = Number(part.value);
        break;
      case 'month':
        month = Number(part.value);
        break;
      case 'day':
        day = Number(part.value);
        break;
      case 'hour':
        hour = Number(part.value);
        break;
      case 'minute':
        minute = Number(part.value);
        break;
      case 'second':
        sec = Number(part.value);
        break;
      default:
        break;
    }
  }
  const wall = new Date(0);
  // setUTCFullYear, not Date.UTC: Date.UTC maps years 0-99 to 1900-1999.
  wall.setUTCFullYear(year, month - 1, day);
  wall.setUTCHours(hour, minute, sec, 0);
  return wall.getTime() - second;
}

function sliceOf(timezone: string, dayIndex: number): DaySlice {
  let zone = slices.get(timezone);
  if (!zone) {
    zone = new RecentCache(SLICES_PER_ZONE);
    slices.set(timezone, zone);
  }
  const cached = zone.get(dayIndex);
  if (cached) return cached;
  const start = dayIndex * DAY_MS;
  const end = start + DAY_MS;
  const before = probeOffset(timezone, start);
  const after = probeOffset(timezone, end);
  let at = end;
  if (after !== before) {
    // The transition lies in (start, end]: bisect to the second (tzdb transitions are whole seconds).
    let lo = start;
    let hi = end;
    while (hi - lo > 1000) {
      const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
      if (probeOffset(timezone, mid) === before) lo = mid;
      else hi = mid;
    }
    at = hi;
  }
  const slice: DaySlice = { before, after, at };
  zone.set(dayIndex, slice);
  return slice;
}

/**
 * The UTC offset of `timezone` at an instant, in milliseconds (wall clock minus UTC: New York in
 * winter is `-18_000_000`), as this runtime's `Intl` time-zone data has it: sub-hour offsets,
 * historical changes and offsets with seconds included.
 *
 * `Intl` is slow (several µs a call), so each zone's history is learnt one UTC day at a time (two
 * probes, plus a bisection to the second on a day with a transition) and kept in a bounded cache;
 * a lookup is then two map reads. The one assumption: a zone changes offset at most once in a UTC
 * day (two changes that cancel out within one day would go unseen; tzdb has no such day in the era
 * a schedule runs in).
 *
 * @param timezone a canonical IANA zone (see `canonicalTimeZone`); an unknown zone throws RangeError.
 */
export function zoneOffsetAt(timezone: string, instantMs: number): number {
  const slice = sliceOf(timezone, Math.floor(instantMs / DAY_MS));
  return instantMs < slice.at ? slice.before : slice.after;
}
