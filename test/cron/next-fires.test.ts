/**
 * nextFireTimes / nextFireAfter across real transitions, per strategy: named cases with the expected
 * instants written out, a brute-force oracle that walks every minute (or second) and reads the wall
 * clock from Intl, and chaining nextFireAfter against nextFireTimes from many start instants.
 * All pure: fixed instants, no clock, no database.
 */
import { Cron } from 'croner';
import { describe, expect, it } from 'vitest';

import { checkCronSpec, type CronSpec } from '../../src/cron/cron-spec.js';
import { DST_STRATEGIES, type DstStrategy } from '../../src/cron/dst-strategy.js';
import { nextFireAfter, nextFireTimes, type CronSpecInput } from '../../src/cron/next-fires.js';
import { InvalidArgumentError } from '../../src/errors/invalid-argument-error.js';

const H = 3_600_000;
const M = 60_000;

function spec(expression: string, timezone: string, dstStrategy: DstStrategy = 'skip'): CronSpec {
  return checkCronSpec({ expression, timezone, dstStrategy }, 'schedule');
}

function fires(s: CronSpec, afterIso: string, n: number): string[] {
  return nextFireTimes(s, new Date(afterIso), n).map((d) => d.toISOString());
}

describe('named cases', () => {
  describe('America/New_York spring forward (2026-03-08 02:00 EST → 03:00 EDT)', () => {
    it('skip: 02:30 does not fire that day', () => {
      expect(fires(spec('30 2 * * *', 'America/New_York'), '2026-03-07T12:00:00Z', 2)).toEqual([
        '2026-03-09T06:30:00.000Z',
        '2026-03-10T06:30:00.000Z',
      ]);
    });
    it.each(['firstof', 'allof'] as const)('%s: 02:30 fires at the jump, 03:00 EDT', (strategy) => {
      expect(fires(spec('30 2 * * *', 'America/New_York', strategy), '2026-03-07T12:00:00Z', 2)).toEqual([
        '2026-03-08T07:00:00.000Z',
        '2026-03-09T06:30:00.000Z',
      ]);
    });
    it('firstof: the gap slots of a 15-minute schedule and 03:00 itself fire once, at the jump', () => {
      expect(fires(spec('*/15 * * * *', 'America/New_York', 'firstof'), '2026-03-08T06:40:00Z', 3)).toEqual([
        '2026-03-08T06:45:00.000Z', // 01:45 EST
        '2026-03-08T07:00:00.000Z', // 02:00, 02:15, 02:30, 02:45 (gap) and 03:00 EDT
        '2026-03-08T07:15:00.000Z', // 03:15 EDT
      ]);
      expect(fires(spec('*/15 * * * *', 'America/New_York', 'skip'), '2026-03-08T06:40:00Z', 3)).toEqual([
        '2026-03-08T06:45:00.000Z',
        '2026-03-08T07:00:00.000Z', // 03:00 EDT, its own slot
        '2026-03-08T07:15:00.000Z',
      ]);
    });
    it('skip: a gap slot of a schedule that has no slot at the jump is simply gone', () => {
      expect(fires(spec('10 2,4 * * *', 'America/New_York', 'skip'), '2026-03-08T05:00:00Z', 1)).toEqual([
        '2026-03-08T08:10:00.000Z', // 04:10 EDT
      ]);
      expect(fires(spec('10 2,4 * * *', 'America/New_York', 'firstof'), '2026-03-08T05:00:00Z', 2)).toEqual([
        '2026-03-08T07:00:00.000Z',
        '2026-03-08T08:10:00.000Z',
      ]);
    });
  });

  describe('America/New_York fall back (2026-11-01 02:00 EDT → 01:00 EST)', () => {
    it.each(['skip', 'firstof'] as const)(
      '%s: 01:30 fires once, at its first occurrence (EDT)',
      (strategy) => {
        expect(fires(spec('30 1 * * *', 'America/New_York', strategy), '2026-10-31T12:00:00Z', 2)).toEqual([
          '2026-11-01T05:30:00.000Z',
          '2026-11-02T06:30:00.000Z',
        ]);
      },
    );
    it('allof: 01:30 fires at both occurrences', () => {
      expect(fires(spec('30 1 * * *', 'America/New_York', 'allof'), '2026-10-31T12:00:00Z', 3)).toEqual([
        '2026-11-01T05:30:00.000Z',
        '2026-11-01T06:30:00.000Z',
        '2026-11-02T06:30:00.000Z',
      ]);
    });
    it('allof: an hourly schedule fires twice at 01:30 that night, in instant order', () => {
      expect(fires(spec('30 * * * *', 'America/New_York', 'allof'), '2026-11-01T04:00:00Z', 4)).toEqual([
        '2026-11-01T04:30:00.000Z', // 00:30 EDT
        '2026-11-01T05:30:00.000Z', // 01:30 EDT
        '2026-11-01T06:30:00.000Z', // 01:30 EST
        '2026-11-01T07:30:00.000Z', // 02:30 EST
      ]);
      expect(fires(spec('30 * * * *', 'America/New_York', 'skip'), '2026-11-01T04:00:00Z', 3)).toEqual([
        '2026-11-01T04:30:00.000Z',
        '2026-11-01T05:30:00.000Z',
        '2026-11-01T07:30:00.000Z',
      ]);
    });
    it('allof: with `after` inside the overlap, the second occurrence is still ahead', () => {
      const s = spec('*/15 1 * * *', 'America/New_York', 'allof');
      // 01:40 EDT, first pass: 01:45 EDT, then the whole second pass.
      expect(fires(s, '2026-11-01T05:40:00Z', 3)).toEqual([
        '2026-11-01T05:45:00.000Z',
        '2026-11-01T06:00:00.000Z',
        '2026-11-01T06:15:00.000Z',
      ]);
      // 01:20 EST, second pass: wall times 01:00-01:15 are behind, 01:30 EST ahead.
      expect(fires(s, '2026-11-01T06:20:00Z', 2)).toEqual([
        '2026-11-01T06:30:00.000Z',
        '2026-11-01T06:45:00.000Z',
      ]);
      // 01:50 EDT: 01:30 has passed on the wall clock, but its EST occurrence has not.
      expect(fires(spec('30 1 * * *', 'America/New_York', 'allof'), '2026-11-01T05:50:00Z', 1)).toEqual([
        '2026-11-01T06:30:00.000Z',
      ]);
      expect(fires(spec('30 1 * * *', 'America/New_York', 'skip'), '2026-11-01T05:50:00Z', 1)).toEqual([
        '2026-11-02T06:30:00.000Z',
      ]);
    });
  });

  describe('Europe/Berlin (2026-03-29 02:00 → 03:00, 2026-10-25 03:00 → 02:00)', () => {
    it('spring: 02:30 skipped, or fired at 03:00 CEST', () => {
      expect(fires(spec('30 2 * * *', 'Europe/Berlin', 'skip'), '2026-03-28T12:00:00Z', 1)).toEqual([
        '2026-03-30T00:30:00.000Z',
      ]);
      expect(fires(spec('30 2 * * *', 'Europe/Berlin', 'firstof'), '2026-03-28T12:00:00Z', 1)).toEqual([
        '2026-03-29T01:00:00.000Z',
      ]);
    });
    it('autumn: 02:30 once (CEST) or twice', () => {
      expect(fires(spec('30 2 * * *', 'Europe/Berlin', 'firstof'), '2026-10-24T12:00:00Z', 2)).toEqual([
        '2026-10-25T00:30:00.000Z',
        '2026-10-26T01:30:00.000Z',
      ]);
      expect(fires(spec('30 2 * * *', 'Europe/Berlin', 'allof'), '2026-10-24T12:00:00Z', 2)).toEqual([
        '2026-10-25T00:30:00.000Z',
        '2026-10-25T01:30:00.000Z',
      ]);
    });
  });

  describe('Australia/Lord_Howe (30-minute shifts: 2026-04-05 02:00 → 01:30, 2026-10-04 02:00 → 02:30)', () => {
    it('overlap 01:30-02:00: 01:45 once, or twice under allof', () => {
      expect(fires(spec('45 1 * * *', 'Australia/Lord_Howe', 'skip'), '2026-04-04T00:00:00Z', 2)).toEqual([
        '2026-04-04T14:45:00.000Z', // 01:45 +11
        '2026-04-05T15:15:00.000Z', // next day, +10:30
      ]);
      expect(fires(spec('45 1 * * *', 'Australia/Lord_Howe', 'allof'), '2026-04-04T00:00:00Z', 2)).toEqual([
        '2026-04-04T14:45:00.000Z',
        '2026-04-04T15:15:00.000Z', // 01:45 +10:30
      ]);
    });
    it('gap 02:00-02:30: 02:15 skipped, or fired at 02:30 +11', () => {
      expect(fires(spec('15 2 * * *', 'Australia/Lord_Howe', 'skip'), '2026-10-03T00:00:00Z', 1)).toEqual([
        '2026-10-04T15:15:00.000Z',
      ]);
      expect(fires(spec('15 2 * * *', 'Australia/Lord_Howe', 'allof'), '2026-10-03T00:00:00Z', 1)).toEqual([
        '2026-10-03T15:30:00.000Z',
      ]);
    });
  });

  describe('offset changes without DST', () => {
    it('Pacific/Apia: noon on the 2011-12-30 that never happened is skipped, or fired at the jump', () => {
      expect(fires(spec('0 12 * * *', 'Pacific/Apia', 'skip'), '2011-12-29T12:00:00Z', 2)).toEqual([
        '2011-12-29T22:00:00.000Z', // 29 Dec noon, -10
        '2011-12-30T22:00:00.000Z', // 31 Dec noon, +14
      ]);
      expect(fires(spec('0 12 * * *', 'Pacific/Apia', 'firstof'), '2011-12-29T12:00:00Z', 3)).toEqual([
        '2011-12-29T22:00:00.000Z',
        '2011-12-30T10:00:00.000Z', // 31 Dec 00:00 +14, for 30 Dec noon
        '2011-12-30T22:00:00.000Z',
      ]);
      // Every hour of 30 December collapses into the one jump, which is also 31 Dec 00:00's own slot.
      expect(fires(spec('0 * * * *', 'Pacific/Apia', 'allof'), '2011-12-30T08:30:00Z', 3)).toEqual([
        '2011-12-30T09:00:00.000Z',
        '2011-12-30T10:00:00.000Z',
        '2011-12-30T11:00:00.000Z',
      ]);
    });
    it('Europe/Moscow 2014-10-26: 01:30 repeated when +4 became +3', () => {
      expect(fires(spec('30 1 * * *', 'Europe/Moscow', 'skip'), '2014-10-25T12:00:00Z', 2)).toEqual([
        '2014-10-25T21:30:00.000Z',
        '2014-10-26T22:30:00.000Z',
      ]);
      expect(fires(spec('30 1 * * *', 'Europe/Moscow', 'allof'), '2014-10-25T12:00:00Z', 2)).toEqual([
        '2014-10-25T21:30:00.000Z',
        '2014-10-25T22:30:00.000Z',
      ]);
    });
  });

  describe('6-field expressions (seconds)', () => {
    it('New York spring gap: every 20 s, the gap collapses into the jump under firstof', () => {
      const s = '*/20 * * * * *';
      expect(fires(spec(s, 'America/New_York', 'firstof'), '2026-03-08T06:59:30Z', 4)).toEqual([
        '2026-03-08T06:59:40.000Z',
        '2026-03-08T07:00:00.000Z',
        '2026-03-08T07:00:20.000Z',
        '2026-03-08T07:00:40.000Z',
      ]);
      expect(fires(spec('30 30 2 * * *', 'America/New_York', 'firstof'), '2026-03-08T00:00:00Z', 1)).toEqual([
        '2026-03-08T07:00:00.000Z',
      ]);
      expect(fires(spec('30 30 2 * * *', 'America/New_York', 'skip'), '2026-03-08T00:00:00Z', 1)).toEqual([
        '2026-03-09T06:30:30.000Z',
      ]);
    });
    it('New York fall back: 01:59:50 twice under allof', () => {
      expect(fires(spec('50 59 1 * * *', 'America/New_York', 'allof'), '2026-11-01T05:59:50Z', 1)).toEqual([
        '2026-11-01T06:59:50.000Z',
      ]);
    });
  });

  it('day-of-month and day-of-week both restricted: either matches (classic cron)', () => {
    expect(fires(spec('0 0 13 * FRI', 'UTC'), '2026-04-01T00:00:00Z', 4)).toEqual([
      '2026-04-03T00:00:00.000Z',
      '2026-04-10T00:00:00.000Z',
      '2026-04-13T00:00:00.000Z', // a Monday
      '2026-04-17T00:00:00.000Z',
    ]);
  });

  it('is strictly after: a fire instant is never returned for itself', () => {
    const s = spec('0 * * * *', 'UTC');
    expect(fires(s, '2026-01-01T10:00:00Z', 1)).toEqual(['2026-01-01T11:00:00.000Z']);
    expect(fires(s, '2026-01-01T09:59:59.999Z', 1)).toEqual(['2026-01-01T10:00:00.000Z']);
    expect(nextFireTimes(s, new Date('2026-01-01T10:00:00Z'), 0)).toEqual([]);
    expect(fires(spec('* * * * * *', 'Asia/Kolkata'), '2026-01-01T10:00:00.500Z', 2)).toEqual([
      '2026-01-01T10:00:01.000Z',
      '2026-01-01T10:00:02.000Z',
    ]);
  });

  it('rejects an invalid `after` or `n`', () => {
    const s = spec('0 * * * *', 'UTC');
    expect(() => nextFireTimes(s, new Date(Number.NaN), 1)).toThrow(InvalidArgumentError);
    expect(() => nextFireTimes(s, new Date(0), -1)).toThrow(/nextFireTimes.n/);
    expect(() => nextFireTimes(s, new Date(0), 1.5)).toThrow(/non-negative integer/);
  });

  it('checks its spec as checkCronSpec does, so a misspelt field is never read as UTC', () => {
    const berlin = { expression: '0 9 * * *', timeZone: 'Europe/Berlin' } as unknown as CronSpecInput;
    const after = new Date('2026-01-01T00:00:00Z');
    expect(() => nextFireTimes(berlin, after, 1)).toThrow(
      /nextFireTimes\.spec\.timeZone is invalid: .*did you mean timezone\?/,
    );
    expect(() => nextFireAfter(berlin, after)).toThrow(/nextFireAfter\.spec\.timeZone/);
    expect(() => nextFireTimes({ expression: '0 0 30 2 *' }, after, 1)).toThrow(
      /nextFireTimes\.spec\.expression/,
    );
    expect(() => nextFireAfter({ expression: '0 9 * * *', timezone: 'Mars/Olympus' }, after)).toThrow(
      /nextFireAfter\.spec\.timezone/,
    );
    // Left out, the zone is UTC and the strategy `skip`; the zone's spelling is normalised.
    expect(nextFireTimes({ expression: '0 9 * * *' }, after, 1)).toEqual([new Date('2026-01-01T09:00:00Z')]);
    expect(nextFireAfter({ expression: '0 9 * * *', timezone: 'europe/berlin' }, after)).toEqual(
      new Date('2026-01-01T08:00:00Z'),
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Oracle: walk every step (a minute, or a second) of a window, read the wall clock from Intl, and
// apply the strategy's definition directly.

const wallFormatters = new Map<string, Intl.DateTimeFormat>();
const wallCache = new Map<string, number>();
/** The wall clock Intl shows at an instant, as ms of a floating clock (memoised: the oracle asks often). */
function wallAt(timezone: string, t: number): number {
  const key = `${timezone} ${t}`;
  let wall = wallCache.get(key);
  if (wall === undefined) {
    wall = readWall(timezone, t);
    wallCache.set(key, wall);
  }
  return wall;
}

function readWall(timezone: string, t: number): number {
  let f = wallFormatters.get(timezone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-GB', {
      timeZone: timezone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    wallFormatters.set(timezone, f);
  }
  const p = Object.fromEntries(f.formatToParts(t).map((x) => [x.type, x.value]));
  return Date.UTC(+p.year!, +p.month! - 1, +p.day!, +p.hour!, +p.minute!, +p.second!);
}

/** The fires in (from, to] by definition; transitions must fall on a multiple of `step`. */
function oracle(
  expression: string,
  timezone: string,
  strategy: DstStrategy,
  from: number,
  to: number,
  step: number,
): number[] {
  const matcher = new Cron(expression, { utcOffset: 0 });
  const matches = (wall: number): boolean => matcher.nextRun(new Date(wall - 1000))?.getTime() === wall;
  const out: number[] = [];
  const seen = new Set<number>();
  // Start early enough that first occurrences before `from` are known.
  let prevWall = wallAt(timezone, from - 3 * H - step);
  for (let t = from - 3 * H; t <= to; t += step) {
    const wall = wallAt(timezone, t);
    let fire = false;
    if (matches(wall)) fire = strategy === 'allof' || !seen.has(wall);
    if (strategy !== 'skip' && wall - prevWall > step) {
      // The clocks jumped at t: did any skipped wall time match?
      for (let w = prevWall + step; w < wall; w += step) if (matches(w)) fire = true;
    }
    seen.add(wall);
    prevWall = wall;
    if (fire && t > from) out.push(t);
  }
  return out;
}

const TRANSITIONS: [zone: string, instant: string][] = [
  ['America/New_York', '2026-03-08T07:00:00Z'],
  ['America/New_York', '2026-11-01T06:00:00Z'],
  ['Europe/Berlin', '2026-03-29T01:00:00Z'],
  ['Europe/Berlin', '2026-10-25T01:00:00Z'],
  ['Australia/Lord_Howe', '2026-04-04T15:00:00Z'],
  ['Australia/Lord_Howe', '2026-10-03T15:30:00Z'],
  ['Pacific/Apia', '2011-12-30T10:00:00Z'],
  ['Europe/Moscow', '2014-10-25T22:00:00Z'],
];

const MINUTE_EXPRESSIONS = [
  '* * * * *',
  '*/15 * * * *',
  '*/7 * * * *',
  '0 * * * *',
  '30 * * * *',
  '0 0 * * *',
  '30 1 * * *',
  '30 2 * * *',
  '45 1 * * *',
  '15 2 * * *',
  '0 12 * * *',
  '0 2,3 * * *',
];

describe('against the minute-by-minute oracle, 14 h either side of each transition', () => {
  for (const [zone, iso] of TRANSITIONS) {
    it(`${zone} ${iso}`, () => {
      const t = new Date(iso).getTime();
      const from = t - 14 * H;
      const to = t + 14 * H;
      for (const expression of MINUTE_EXPRESSIONS) {
        for (const strategy of DST_STRATEGIES) {
          const expected = oracle(expression, zone, strategy, from, to, M);
          const s = spec(expression, zone, strategy);
          const got = nextFireTimes(s, new Date(from), expected.length + 1).map((d) => d.getTime());
          expect(got.slice(0, expected.length), `${expression} ${strategy}`).toEqual(expected);
          expect(got[expected.length]!, `${expression} ${strategy} beyond the window`).toBeGreaterThan(to);
        }
      }
    });
  }
});

describe('against the second-by-second oracle, 40 min either side (6-field expressions)', () => {
  for (const [zone, iso] of TRANSITIONS.filter(([z]) => z !== 'Pacific/Apia')) {
    it(`${zone} ${iso}`, () => {
      const t = new Date(iso).getTime();
      const from = t - 40 * M;
      const to = t + 40 * M;
      for (const expression of ['*/20 * * * * *', '7 */5 * * * *', '30 30 * * * *', '0 0 * * * *']) {
        for (const strategy of DST_STRATEGIES) {
          const expected = oracle(expression, zone, strategy, from, to, 1000);
          const got = nextFireTimes(spec(expression, zone, strategy), new Date(from), expected.length).map(
            (d) => d.getTime(),
          );
          expect(got, `${expression} ${strategy}`).toEqual(expected);
        }
      }
    });
  }
});

describe('chaining nextFireAfter reproduces nextFireTimes', () => {
  for (const [zone, iso] of TRANSITIONS) {
    it(`${zone} ${iso}, starts every 13 min from 4 h before to 4 h after, and inside gap and overlap`, () => {
      const t = new Date(iso).getTime();
      const starts: number[] = [];
      for (let s = t - 4 * H; s <= t + 4 * H; s += 13 * M) starts.push(s);
      // Inside a one-hour gap or overlap on either side of the instant, to the millisecond.
      starts.push(t - 1, t, t + 1, t - 30 * M, t + 20 * M + 500, t + 45 * M, t - 45 * M + 999);
      for (const expression of ['*/15 * * * *', '30 * * * *', '30 1 * * *', '30 2 * * *', '*/20 * * * * *']) {
        for (const strategy of DST_STRATEGIES) {
          const s = spec(expression, zone, strategy);
          for (const start of starts) {
            const all = nextFireTimes(s, new Date(start), 8);
            const chained: Date[] = [];
            let prev = new Date(start);
            for (let i = 0; i < 8; i++) {
              prev = nextFireAfter(s, prev);
              chained.push(prev);
            }
            const label = `${expression} ${strategy} from ${new Date(start).toISOString()}`;
            expect(chained, label).toEqual(all);
            expect(all[0]!.getTime(), label).toBeGreaterThan(start);
            for (let i = 1; i < all.length; i++)
              expect(all[i]!.getTime(), label).toBeGreaterThan(all[i - 1]!.getTime());
          }
        }
      }
    });
  }
});
