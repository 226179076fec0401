/**
 * Dependency injection errors: malformed declarations (`DIError`), the startup validation's
 * findings (`DependencyCycle`, `ScopeViolation`, and `MissingProvider` in its own file), several
 * findings at once (`DependencyValidationError`), and failures while an attempt's values are made.
 */
import type { Scope } from '../di/scope.js';
import type { MissingProvider } from './missing-provider-error.js';
import { TaskQError } from './taskq-error.js';

/**
 * A malformed dependency declaration: a non-token in `inject`, a token registered twice, a factory
 * that is not a function. Thrown where the declaration is made, before anything runs.
 */
export class DIError extends TaskQError {
  constructor(message: string, options?: { cause?: unknown }, code = 'TASKQ_DI_ERROR') {
    super(code, message, options);
  }
}

/** The providers' dependencies form a cycle: no order can make them. */
export class DependencyCycle extends TaskQError {
  /** The tokens around the cycle, the first repeated at the end: `['A', 'B', 'A']`. */
  readonly cyclePath: readonly string[];

  constructor(cyclePath: readonly string[]) {
    super(
      'TASKQ_DEPENDENCY_CYCLE',
      `dependency cycle: ${cyclePath.join(' -> ')}: a provider cannot depend on itself, even ` +
        `through others; remove one of these injections`,
    );
    this.cyclePath = Object.freeze([...cyclePath]);
  }
}

/** A provider depends on a value of a narrower (shorter-lived) scope than its own. */
export class ScopeViolation extends TaskQError {
  /** The dependent provider's scope. */
  readonly fromScope: Scope;
  /** The scope of the value it depends on (narrower). */
  readonly toScope: Scope;
  /** The name of the token depended on. */
  readonly tokenName: string;
  /** The name of the dependent provider's token. */
  readonly dependent: string;

  constructor(fields: { fromScope: Scope; toScope: Scope; tokenName: string; dependent: string }) {
    super(
      'TASKQ_SCOPE_VIOLATION',
      `${fields.fromScope}-scoped ${fields.dependent} depends on ${fields.toScope}-scoped ${fields.tokenName}: ` +
        `a value cannot hold one that is torn down before it; make ${fields.dependent} ` +
        `${fields.toScope}-scoped, or ${fields.tokenName} ${fields.fromScope}-scoped or wider`,
    );
    this.fromScope = fields.fromScope;
    this.toScope = fields.toScope;
    this.tokenName = fields.tokenName;
    this.dependent = fields.dependent;
  }
}

/** One finding of the startup validation. */
export type DependencyProblem = DependencyCycle | ScopeViolation | MissingProvider | DependencyNotCloneable;

/** The worker refused to start: the startup validation found several problems, all listed here. */
export class DependencyValidationError extends TaskQError {
  /**
   * Every problem found: cycles, then scope violations, then the missing providers (or, once the
   * values are made, every value a thread-isolated actor injects that cannot cross to its thread).
   */
  readonly problems: readonly DependencyProblem[];

  constructor(problems: readonly DependencyProblem[]) {
    super(
      'TASKQ_DEPENDENCY_VALIDATION',
      `the worker's dependencies have ${problems.length} problems: ` +
        problems.map((p, i) => `(${i + 1}) ${p.message}`).join(' '),
    );
    this.problems = Object.freeze([...problems]);
  }
}

/**
 * A provider's factory failed: while an attempt's values were being made (the attempt fails with
 * this error, retried per the actor's retry policy; the values already made were torn down), or at
 * worker start (the start fails; the values already made were torn down).
 */
export class DependencyResolutionError extends DIError {
  /** The token whose factory failed. */
  readonly tokenName: string;
  /** The actor whose attempt needed it, or null when it failed at worker start. */
  readonly actor: string | null;

  constructor(tokenName: string, actor: string | null, cause: unknown) {
    const why = cause instanceof Error ? cause.message : String(cause);
    super(
      actor === null
        ? `the provider of ${tokenName} failed at worker start: ${why} (see cause; the worker did not start)`
        : `the provider of ${tokenName} failed while making actor ${JSON.stringify(actor)}'s dependencies: ` +
            `${why} (see cause; the attempt is retried per the actor's retry policy)`,
      { cause },
      'TASKQ_DEPENDENCY_RESOLUTION_FAILED',
    );
    this.tokenName = tokenName;
    this.actor = actor;
  }
}

/** A value injected into a thread-isolated actor cannot be copied to its thread (structured clone). */
export class DependencyNotCloneable extends DIError {
  /** The token whose value cannot cross. */
  readonly tokenName: string;
  /** The thread-isolated actor that injects it. */
  readonly actor: string;

  constructor(tokenName: string, actor: string, cause: unknown) {
    super(
      `${tokenName}, injected into thread-isolated actor ${JSON.stringify(actor)}, cannot be copied to ` +
        `its thread (${cause instanceof Error ? cause.message : String(cause)}): only structured-clone ` +
        `data crosses a thread (plain objects, arrays, strings, numbers, Dates, Maps, buffers); inject ` +
        `settings instead and build the client in the thread module, or use an in-process actor`,
      { cause },
      'TASKQ_DEPENDENCY_NOT_CLONEABLE',
    );
    this.tokenName = tokenName;
    this.actor = actor;
  }
}
