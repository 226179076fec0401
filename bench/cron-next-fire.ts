// Cost of the cron time math per call (µs, median of 5 rounds of 10,000 calls), America/New_York.
//
//   npx tsx bench/cron-next-fire.ts
//
// Pure CPU: no database. Columns: nextFireTimes(spec, after, 1) over 10,000 instants spread over a
// year and chained from each previous fire (both computed, never memoised), then nextFireAfter on
// instants it has not seen (a miss of its memo) and on the same instants again (a hit).
import { checkCronSpec } from '../src/cron/cron-spec.js';
import { nextFireAfter, nextFireTimes } from '../src/cron/next-fires.js';
const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
function bench(expression: string, strategy: 'skip' | 'allof') {
  const s = checkCronSpec({ expression, timezone: 'America/New_York', dstStrategy: strategy }, 's');
  const start = Date.UTC(2026, 0, 1);
  const afters = Array.from({ length: 10_000 }, (_, i) => new Date(start + i * 3_153_600 + 17_000)); // spread over a year
  for (const a of afters) nextFireTimes(s, a, 1); // warm zone slices and the pattern
  const raw: number[] = [],
    chained: number[] = [],
    miss: number[] = [],
    hit: number[] = [];
  for (let r = 0; r < 5; r++) {
    let t0 = performance.now();
    for (const a of afters) nextFireTimes(s, a, 1);
    raw.push(((performance.now() - t0) / afters.length) * 1000);
    let t = new Date(start + r * 1000); // a new phase each round, so the memo misses
    t0 = performance.now();
    for (let i = 0; i < 10_000; i++) t = nextFireTimes(s, t, 1)[0]!;
    chained.push(((performance.now() - t0) / 10_000) * 1000);
    const fresh = afters.map((a) => new Date(a.getTime() + 1 + r * 7)); // distinct from any earlier round
    t0 = performance.now();
    for (const a of fresh) nextFireAfter(s, a);
    miss.push(((performance.now() - t0) / fresh.length) * 1000);
    t0 = performance.now();
    for (const a of fresh) nextFireAfter(s, a);
    hit.push(((performance.now() - t0) / fresh.length) * 1000);
  }
  const f = (x: number) => x.toFixed(2).padStart(6);
  console.log(
    `${(expression + ' ' + strategy).padEnd(24)} computed: 10k afters ${f(median(raw))} µs, chained ${f(median(chained))} µs | nextFireAfter miss ${f(median(miss))} µs, hit ${f(median(hit))} µs`,
  );
}
for (const e of ['*/15 * * * *', '0 * * * *', '30 9 * * 1-5', '*/20 * * * * *', '0 30 9 * * 1-5'])
  bench(e, 'skip');
bench('*/15 * * * *', 'allof');
