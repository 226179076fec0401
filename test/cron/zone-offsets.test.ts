/** zoneOffsetAt and canonicalTimeZone against transitions whose dates Intl itself reports. */
import { describe, expect, it } from 'vitest';

import { canonicalTimeZone } from '../../src/cron/canonical-time-zone.js';
import { zoneOffsetAt } from '../../src/cron/zone-offsets.js';

const H = 3_600_000;
const M = 60_000;
const at = (iso: string): number => new Date(iso).getTime();

/** The local time Intl shows for an instant, e.g. `2026-03-08 03:00:00 EDT`: an independent reading. */
function shown(timezone: string, instant: number): string {
  return new Intl.DateTimeFormat('sv-SE', {
    timeZone: timezone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    timeZoneName: 'shortOffset',
  }).format(instant);
}

describe('zoneOffsetAt', () => {
  it.each([
    // zone, transition instant, offset before, offset after, local time just before → just after
    [
      'America/New_York',
      '2026-03-08T07:00:00Z',
      -5 * H,
      -4 * H,
      '2026-03-08 01:59:59 GMT−5',
      '2026-03-08 03:00:00 GMT−4',
    ],
    [
      'America/New_York',
      '2026-11-01T06:00:00Z',
      -4 * H,
      -5 * H,
      '2026-11-01 01:59:59 GMT−4',
      '2026-11-01 01:00:00 GMT−5',
    ],
    [
      'Europe/Berlin',
      '2026-03-29T01:00:00Z',
      1 * H,
      2 * H,
      '2026-03-29 01:59:59 GMT+1',
      '2026-03-29 03:00:00 GMT+2',
    ],
    [
      'Europe/Berlin',
      '2026-10-25T01:00:00Z',
      2 * H,
      1 * H,
      '2026-10-25 02:59:59 GMT+2',
      '2026-10-25 02:00:00 GMT+1',
    ],
    // Lord Howe moves by 30 minutes: back on the first Sunday of April, forward on the first of October.
    [
      'Australia/Lord_Howe',
      '2026-04-04T15:00:00Z',
      11 * H,
      10.5 * H,
      '2026-04-05 01:59:59 GMT+11',
      '2026-04-05 01:30:00 GMT+10:30',
    ],
    [
      'Australia/Lord_Howe',
      '2026-10-03T15:30:00Z',
      10.5 * H,
      11 * H,
      '2026-10-04 01:59:59 GMT+10:30',
      '2026-10-04 02:30:00 GMT+11',
    ],
    // Samoa crossed the date line: 2011-12-30 never happened there.
    [
      'Pacific/Apia',
      '2011-12-30T10:00:00Z',
      -10 * H,
      14 * H,
      '2011-12-29 23:59:59 GMT−10',
      '2011-12-31 00:00:00 GMT+14',
    ],
    // Moscow left permanent "summer" time: +4 to +3, no DST either side.
    [
      'Europe/Moscow',
      '2014-10-25T22:00:00Z',
      4 * H,
      3 * H,
      '2014-10-26 01:59:59 GMT+4',
      '2014-10-26 01:00:00 GMT+3',
    ],
  ])('%s changes at %s', (zone, iso, before, after, localBefore, localAfter) => {
    const t = at(iso);
    // The transition dates are Intl's, not ours: check them independently first.
    expect(shown(zone, t - 1000)).toBe(localBefore);
    expect(shown(zone, t)).toBe(localAfter);
    expect(zoneOffsetAt(zone, t - 1)).toBe(before);
    expect(zoneOffsetAt(zone, t)).toBe(after);
    expect(zoneOffsetAt(zone, t - 12 * H)).toBe(before);
    expect(zoneOffsetAt(zone, t + 12 * H)).toBe(after);
    expect(zoneOffsetAt(zone, t - 3 * M)).toBe(before);
    expect(zoneOffsetAt(zone, t + 3 * M)).toBe(after);
  });

  it('gives offsets with seconds exactly (New York local mean time before 1883)', () => {
    // -4:56:02
    expect(zoneOffsetAt('America/New_York', at('1880-06-01T12:00:00Z'))).toBe(-(4 * H + 56 * M + 2000));
    // The switch to standard time at noon local, 1883-11-18 (17:00 UTC).
    expect(zoneOffsetAt('America/New_York', at('1883-11-18T16:59:59Z'))).toBe(-(4 * H + 56 * M + 2000));
    expect(zoneOffsetAt('America/New_York', at('1883-11-18T17:00:00Z'))).toBe(-5 * H);
  });

  it('is the same for every millisecond of a second and for instants before 1970', () => {
    expect(zoneOffsetAt('Asia/Kolkata', at('2026-01-01T00:00:00.999Z'))).toBe(5.5 * H);
    expect(zoneOffsetAt('Asia/Kathmandu', at('1960-01-01T00:00:00Z'))).toBe(5.5 * H);
    expect(zoneOffsetAt('Asia/Kathmandu', at('2026-01-01T00:00:00Z'))).toBe(5.75 * H);
    expect(zoneOffsetAt('UTC', at('2026-07-01T00:00:00Z'))).toBe(0);
  });
});

describe('canonicalTimeZone', () => {
  it('spells zones as Intl does and refuses unknown ones and fixed offsets', () => {
    expect(canonicalTimeZone('america/new_york')).toBe('America/New_York');
    expect(canonicalTimeZone('EUROPE/BERLIN')).toBe('Europe/Berlin');
    expect(canonicalTimeZone('UTC')).toBe('UTC');
    expect(canonicalTimeZone('Mars/Olympus_Mons')).toBeNull();
    expect(canonicalTimeZone('+05:30')).toBeNull();
    expect(canonicalTimeZone('')).toBeNull();
  });
});
