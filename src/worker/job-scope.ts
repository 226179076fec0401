/**
 * The per-attempt dependency scope around a handler (the reference's `build_actor_scope`): makes the
 * actor's job-scoped values, calls the handler with them, and tears them down, last made first,
 * once the handler's promise settles, whichever way (returned, threw, cancelled, timed out). The
 * runner calls it only for actors that inject something.
 */
import type { AnyActor } from '../core/actor.js';
import { makeAttemptValues, type AttemptValues } from '../di/attempt-dependencies.js';
import type { WorkerDependencies } from '../di/worker-dependencies.js';
import { DIError } from '../errors/di-errors.js';
import type { Logger } from '../obs/logger.js';

/** Calls handlers of injecting actors inside their attempt's dependency scope. */
export class JobScope {
  constructor(private readonly dependencies: WorkerDependencies | null) {}

  /**
   * Calls `call` with the attempt's injected values and returns what it returns (a promise when a
   * value had to be awaited or torn down). Teardown failures are logged on `log`
   * (`di-teardown-failed`) and never change the attempt's outcome.
   */
  invoke(actor: AnyActor, log: Logger, call: (deps: Readonly<Record<string, unknown>>) => unknown): unknown {
    const plan = this.dependencies?.plan(actor.name);
    if (plan === undefined)
      throw new DIError(
        `actor ${JSON.stringify(actor.name)} injects dependencies but this worker has no providers for it: ` +
          'pass providers to the Worker (new Worker({ actors, providers }))',
      );
    if (plan.fixed !== null) return call(plan.fixed);
    const made = makeAttemptValues(plan, log);
    if (made instanceof Promise) return made.then((m) => callWith(m, log, call));
    return callWith(made, log, call);
  }
}

function callWith(
  made: AttemptValues,
  log: Logger,
  call: (deps: Readonly<Record<string, unknown>>) => unknown,
): unknown {
  const teardowns = made.teardowns;
  if (teardowns === null) return call(made.deps);
  let out: unknown;
  try {
    out = call(made.deps);
  } catch (err) {
    return teardowns.runAll(log, 'job').then(() => {
      throw err;
    });
  }
  return Promise.resolve(out).then(
    (value) => teardowns.runAll(log, 'job').then(() => value),
    (err: unknown) =>
      teardowns.runAll(log, 'job').then(() => {
        throw err;
      }),
  );
}
