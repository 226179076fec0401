import { InvalidArgumentError } from '../../errors/invalid-argument-error.js';
import { BoundedCheck, type ReadinessCheck } from './bounded-check.js';

/** The built-in check's name: the Postgres ping. */
export const POSTGRES_CHECK = 'postgres';

const CHECK_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;
const CHECK_NAME_RULE =
  '1-64 characters of letters, digits, "_", ".", ":" or "-", starting with a letter or digit';

/**
 * The readiness checks registered on a worker (`worker.health`): each one must pass for `/ready`
 * to answer 200, besides the Postgres ping. Each is bounded by `healthReadinessCheckTimeout` and runs
 * at most once at a time. Checks can be added before or after the worker starts.
 *
 * ```ts
 * const unregister = worker.health.registerReadinessCheck('search-index', async (signal) => {
 *   const res = await fetch('http://search:9200/_cluster/health', { signal });
 *   return res.ok; // false (or a throw) fails the check
 * });
 * ```
 */
export class ReadinessChecks {
  private readonly checks = new Map<string, BoundedCheck>();

  /**
   * Adds a check named `name` (shown in `/ready`'s body). It passes when `check(signal)` resolves to
   * anything but `false`; it fails when it throws, rejects, resolves to `false`, or outlasts
   * `healthReadinessCheckTimeout` (then `signal` is aborted). Returns a function that removes it.
   *
   * @throws InvalidArgumentError when the name is malformed, `postgres` (built in) or taken, or
   *   `check` is not a function
   */
  registerReadinessCheck(name: string, check: ReadinessCheck): () => void {
    const field = 'registerReadinessCheck.name';
    if (typeof name !== 'string' || !CHECK_NAME_RE.test(name))
      throw new InvalidArgumentError(field, name, `must be ${CHECK_NAME_RULE}`);
    if (name === POSTGRES_CHECK)
      throw new InvalidArgumentError(field, name, 'is the built-in Postgres check; choose another name');
    if (this.checks.has(name))
      throw new InvalidArgumentError(field, name, 'is already registered; unregister it first');
    if (typeof check !== 'function')
      throw new InvalidArgumentError('registerReadinessCheck.check', check, 'must be a function');
    const entry = new BoundedCheck(name, check);
    this.checks.set(name, entry);
    return () => {
      if (this.checks.get(name) === entry) this.checks.delete(name);
    };
  }

  /** The names of the registered checks, in registration order. */
  names(): string[] {
    return [...this.checks.keys()];
  }

  /** The registered checks (for the readiness probe). */
  list(): BoundedCheck[] {
    return [...this.checks.values()];
  }
}
