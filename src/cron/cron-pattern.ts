import { Cron } from 'croner';

import { RecentCache } from './recent-cache.js';

const patterns = new RecentCache<string, Cron>(1000);

/**
 * A croner instance that enumerates the wall-clock times an expression matches, cached per
 * expression (about the 1,000 to 2,000 most recently used, see `RecentCache`): the leader asks for
 * the next fire of thousands of schedules a tick, and parsing is most of croner's cost.
 *
 * It runs at a fixed UTC offset of 0 (`utcOffset: 0`), where a `Date` is a floating wall clock: no
 * DST, whatever the process's own zone. Mapping wall times to instants in the schedule's zone is
 * `nextFireTimes`'s job. (croner's own `timezone: 'UTC'` gives the same times but goes through
 * `Intl` on every step, tens of times slower.)
 *
 * @throws whatever croner throws for an expression it rejects (callers validate first with
 *   `checkCronSpec`).
 */
export function cronPattern(expression: string): Cron {
  let cron = patterns.get(expression);
  if (!cron) {
    cron = new Cron(expression, { utcOffset: 0 });
    patterns.set(expression, cron);
  }
  return cron;
}
