/** RecentCache keeps recently used entries within its bound; nextFireAfter's memo hands out fresh Dates. */
import { describe, expect, it } from 'vitest';

import { checkCronSpec } from '../../src/cron/cron-spec.js';
import { nextFireAfter } from '../../src/cron/next-fires.js';
import { RecentCache } from '../../src/cron/recent-cache.js';

describe('RecentCache', () => {
  it('keeps between capacity and twice capacity entries, recently used ones first', () => {
    const cache = new RecentCache<number, string>(3);
    for (const k of [1, 2, 3]) cache.set(k, `v${k}`);
    cache.set(4, 'v4'); // 1-3 become the old generation
    expect(cache.get(1)).toBe('v1'); // a hit in the old generation moves back to the young one
    cache.set(5, 'v5');
    cache.set(6, 'v6'); // young (4, 1, 5) full: it becomes old, 2 and 3 are dropped
    expect(cache.get(2)).toBeUndefined();
    expect(cache.get(3)).toBeUndefined();
    for (const k of [1, 4, 5, 6]) expect(cache.get(k)).toBe(`v${k}`);
  });
});

describe('nextFireAfter memo', () => {
  it('returns a fresh Date each time: mutating one does not change the next answer', () => {
    const spec = checkCronSpec({ expression: '0 * * * *', timezone: 'Europe/Berlin' }, 's');
    const after = new Date('2026-05-01T10:20:00Z');
    const first = nextFireAfter(spec, after);
    expect(first.toISOString()).toBe('2026-05-01T11:00:00.000Z');
    first.setTime(0);
    expect(nextFireAfter(spec, after).toISOString()).toBe('2026-05-01T11:00:00.000Z');
    // Same instant, another spec: not confused with the first.
    const other = checkCronSpec({ expression: '0 * * * *', timezone: 'Asia/Kolkata' }, 's');
    expect(nextFireAfter(other, after).toISOString()).toBe('2026-05-01T10:30:00.000Z');
  });
});
