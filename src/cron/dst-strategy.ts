/**
 * What a cron schedule does with wall-clock times that a daylight-saving (or any other offset)
 * transition makes ambiguous or impossible.
 *
 * - `skip` (the default): a slot whose wall time falls in a gap (clocks jump forward) does not
 *   fire; a wall time that occurs twice (clocks fall back) fires once, at its first occurrence.
 * - `firstof`: overlaps fire once, at the first occurrence; a slot in a gap fires once, at the
 *   instant the clocks jump (several slots in one gap fire once together). The gap rule is TaskQ's
 *   choice: the reference only defines overlaps for this strategy.
 * - `allof`: overlaps fire at both occurrences; gaps as `firstof` (again TaskQ's choice).
 */
export type DstStrategy = 'skip' | 'firstof' | 'allof';

/** Every {@link DstStrategy}, the default (`skip`) first. */
export const DST_STRATEGIES: readonly DstStrategy[] = Object.freeze(['skip', 'firstof', 'allof']);
