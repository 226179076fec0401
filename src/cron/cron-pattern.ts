import { Cron } from 'croner';

/** Parsed expressions kept (least recently used evicted beyond). */
const MAX_CACHED_PATTERNS = 1000;

const patterns = new Map<string, Cron>();

/**
 * A croner instance that enumerates the wall-clock times an expression matches, cached per
 * expression (LRU, 1,000 entries): the leader asks for the next fire of thousands of schedules a
 * tick, and parsing is most of croner's cost.
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
  const cached = patterns.get(expression);
  if (cached) {
    // Refresh its place: Map iteration order is insertion order, so the first key is the LRU one.
    patterns.delete(expression);
    patterns.set(expression, cached);
    return cached;
  }
  const cron = new Cron(expression, { utcOffset: 0 });
  if (patterns.size >= MAX_CACHED_PATTERNS) {
    const oldest = patterns.keys().next();
    if (!oldest.done) patterns.delete(oldest.value);
  }
  patterns.set(expression, cron);
  return cron;
}
