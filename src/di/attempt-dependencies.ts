/**
 * One attempt's injected values, made from its actor's plan: job-scoped factories run in order
 * (dependencies first), synchronously as long as they return plain values, so an actor whose
 * factories are all synchronous pays no promise for them.
 */
import { DependencyNotCloneable, DependencyResolutionError } from '../errors/di-errors.js';
import { RetryAfter, Snooze } from '../retry/control-flow.js';
import type { Logger } from '../obs/logger.js';
import { disposerOf, Teardowns } from './teardowns.js';
import type { ActorPlan, ArgSource, PlanStep } from './worker-dependencies.js';

/** What an attempt's handler gets, and what to tear down after it (null: nothing). */
export interface AttemptValues {
  /** The handler's third argument. */
  readonly deps: Readonly<Record<string, unknown>>;
  /** The teardowns of the job-scoped values made, or null when none has one. */
  readonly teardowns: Teardowns | null;
}

/**
 * Makes the attempt's job-scoped values. A factory that throws (or rejects) fails it with
 * `DependencyResolutionError` after the values made so far are torn down; for a thread-isolated
 * actor, a job-scoped value that cannot be cloned fails it with `DependencyNotCloneable`.
 */
export function makeAttemptValues(plan: ActorPlan, log: Logger): AttemptValues | Promise<AttemptValues> {
  const steps = plan.steps;
  const made: unknown[] = new Array<unknown>(steps.length);
  let teardowns: Teardowns | null = null;

  const fail = (err: unknown): Promise<never> => {
    const t = teardowns;
    if (t === null) return Promise.reject(err);
    return t.runAll(log, 'job').then(() => {
      throw err;
    });
  };
  const record = (step: PlanStep, i: number, value: unknown): void => {
    made[i] = value;
    const run = disposerOf(step.entry, value);
    if (run !== null) (teardowns ??= new Teardowns()).push(step.entry.token.name, run);
  };
  const finish = (): AttemptValues | Promise<AttemptValues> => {
    const deps = argsOf(plan.args, made);
    if (plan.thread) {
      for (const a of plan.args) {
        if (a.wide) continue; // checked once, at worker start
        try {
          structuredClone(made[a.index]);
        } catch (err) {
          return fail(new DependencyNotCloneable(steps[a.index]!.entry.token.name, plan.actor, err));
        }
      }
    }
    return { deps, teardowns };
  };
  const from = (start: number): AttemptValues | Promise<AttemptValues> => {
    for (let i = start; i < steps.length; i++) {
      const step = steps[i]!;
      let value: unknown;
      try {
        value = step.entry.create!(argsOf(step.args, made));
      } catch (err) {
        return fail(resolutionError(step, plan.actor, err));
      }
      if (isThenable(value)) {
        return Promise.resolve(value).then(
          (v) => {
            record(step, i, v);
            return from(i + 1);
          },
          (err: unknown) => fail(resolutionError(step, plan.actor, err)),
        );
      }
      record(step, i, value);
    }
    return finish();
  };
  return from(0);
}

/**
 * What a failed factory fails the attempt with: its `Snooze` or `RetryAfter` as thrown (a factory
 * may defer the job, e.g. while a pool is exhausted), anything else wrapped with the token's name.
 */
function resolutionError(step: PlanStep, actor: string, err: unknown): unknown {
  if (err instanceof Snooze || err instanceof RetryAfter) return err;
  return new DependencyResolutionError(step.entry.token.name, actor, err);
}

function argsOf(sources: readonly ArgSource[], made: readonly unknown[]): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const s of sources) args[s.name] = s.wide ? s.value : made[s.index];
  return args;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
