/**
 * Teardown of made values: last made, first torn down; every teardown runs even when one fails
 * (each failure logged with its token, never thrown), as the reference's log-and-continue policy.
 */
import type { Logger } from '../obs/logger.js';
import type { ProviderEntry } from './providers.js';

/** A made value's teardown: the declared disposer, else its `Symbol.asyncDispose` or `Symbol.dispose`. */
export function disposerOf(entry: ProviderEntry, value: unknown): (() => unknown) | null {
  const declared = entry.dispose;
  if (declared !== null) return () => declared(value);
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return null;
  const v = value as { [Symbol.asyncDispose]?: unknown; [Symbol.dispose]?: unknown };
  const asyncDispose = v[Symbol.asyncDispose];
  if (typeof asyncDispose === 'function') return () => (asyncDispose as () => unknown).call(value);
  const dispose = v[Symbol.dispose];
  if (typeof dispose === 'function') return () => (dispose as () => unknown).call(value);
  return null;
}

/** The teardowns of one scope's values, in the order the values were made. */
export class Teardowns {
  private readonly stack: { token: string; run: () => unknown }[] = [];

  /** How many are registered. */
  get size(): number {
    return this.stack.length;
  }

  /** Registers the teardown of `value` (a no-op when it has none). */
  add(entry: ProviderEntry, value: unknown): void {
    const run = disposerOf(entry, value);
    if (run !== null) this.stack.push({ token: entry.token.name, run });
  }

  /** Registers a teardown found with {@link disposerOf}. */
  push(token: string, run: () => unknown): void {
    this.stack.push({ token, run });
  }

  /**
   * Runs them all, last first, each awaited; a failure is logged as `di-teardown-failed` with the
   * token's name and the scope, and the next one runs. Never rejects.
   */
  async runAll(log: Logger, scope: string): Promise<void> {
    while (this.stack.length > 0) {
      const t = this.stack.pop()!;
      try {
        await t.run();
      } catch (err) {
        log.error({ err, token: t.token, scope }, 'di-teardown-failed');
      }
    }
  }
}
