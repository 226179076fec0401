/**
 * How long a provided value lives. From widest to narrowest:
 *
 * - `process`: one per process, shared by every Worker in it (the reference's PROCESS);
 * - `worker`: one per Worker instance, made at its start and torn down at its stop (the reference's
 *   THREAD and LOOP: a Worker lives on one event loop of one thread, so both collapse into it);
 * - `job`: one per attempt, made before the handler runs and torn down after it (TRANSIENT).
 *
 * A value may depend on values of its own scope or a wider one; depending on a narrower one is a
 * `ScopeViolation` (a long-lived value would hold a short-lived one past its teardown).
 */
export type Scope = 'process' | 'worker' | 'job';

/** The scopes, widest first. */
export const SCOPES: readonly Scope[] = Object.freeze(['process', 'worker', 'job']);

/** 0 for the widest scope; a larger number is a narrower scope. */
export function scopeRank(scope: Scope): number {
  return scope === 'process' ? 0 : scope === 'worker' ? 1 : 2;
}

/** True when `value` names a scope. */
export function isScope(value: unknown): value is Scope {
  return value === 'process' || value === 'worker' || value === 'job';
}
