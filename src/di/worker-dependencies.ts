/**
 * A Worker's dependencies: at start it makes (or, for process-scoped ones, shares) every process-
 * and worker-scoped value and plans each injecting actor's attempts; at stop it tears its values
 * down. What an attempt does with a plan is in attempt-dependencies.ts.
 */
import type { AnyActor } from '../core/actor.js';
import {
  DependencyNotCloneable,
  DependencyResolutionError,
  DependencyValidationError,
} from '../errors/di-errors.js';
import type { Logger } from '../obs/logger.js';
import { acquireProcessValue, releaseProcessValue } from './process-values.js';
import type { ProviderEntry, Providers } from './providers.js';
import { Teardowns } from './teardowns.js';
import type { Token } from './token.js';
import { creationOrder } from './validate-dependencies.js';

/** Where one argument of a job-scoped factory, or of the handler, comes from. */
export type ArgSource =
  /** A process- or worker-scoped value, made at start. */
  | { readonly name: string; readonly wide: true; readonly value: unknown }
  /** The value of the plan's step at `index`, made earlier in the same attempt. */
  | { readonly name: string; readonly wide: false; readonly index: number };

/** One job-scoped value an attempt makes. */
export interface PlanStep {
  /** Its registration. */
  readonly entry: ProviderEntry;
  /** Its factory's arguments. */
  readonly args: readonly ArgSource[];
}

/** How an actor's attempts get their injected values. */
export interface ActorPlan {
  /** The actor's name (for messages). */
  readonly actor: string;
  /** The actor runs in a worker thread: its values must survive a structured clone. */
  readonly thread: boolean;
  /** The injected values when none is job-scoped: one frozen object shared by every attempt. */
  readonly fixed: Readonly<Record<string, unknown>> | null;
  /** The job-scoped values to make, dependencies first (empty when `fixed` is set). */
  readonly steps: readonly PlanStep[];
  /** The handler's arguments. */
  readonly args: readonly ArgSource[];
}

/** Made values and plans of one Worker. */
export class WorkerDependencies {
  /** Process- and worker-scoped values this Worker holds, by registration. */
  private readonly values = new Map<ProviderEntry, unknown>();
  private readonly workerTeardowns = new Teardowns();
  /** Process-scoped registrations this Worker holds a reference to, in the order acquired. */
  private readonly acquired: ProviderEntry[] = [];
  private readonly plans = new Map<string, ActorPlan>();

  constructor(
    private readonly providers: Providers,
    private readonly actors: ReadonlyMap<string, AnyActor>,
    private readonly logger: Logger,
  ) {}

  /**
   * Makes every process- and worker-scoped value (dependencies first), plans the injecting actors'
   * attempts, and checks that what thread-isolated actors inject can cross to a thread. On failure
   * everything made so far is torn down and the error thrown: `DependencyResolutionError` (a factory
   * failed) or `DependencyNotCloneable` / `DependencyValidationError` (values a thread cannot take).
   */
  async start(): Promise<void> {
    try {
      const wide = this.providers.entries().filter((e) => e.scope !== 'job');
      for (const e of creationOrder(wide, this.providers)) await this.make(e);
      for (const a of this.actors.values()) if (a.inject !== null) this.plans.set(a.name, this.planFor(a));
      this.checkThreadValues();
    } catch (err) {
      await this.close();
      throw err;
    }
  }

  /** The plan of an injecting actor of this Worker. */
  plan(actor: string): ActorPlan | undefined {
    return this.plans.get(actor);
  }

  /** Tears down the worker-scoped values (last made first) and lets go of the process-scoped ones. */
  async close(): Promise<void> {
    await this.workerTeardowns.runAll(this.logger, 'worker');
    while (this.acquired.length > 0) await releaseProcessValue(this.acquired.pop()!, this.logger);
    this.values.clear();
  }

  private async make(e: ProviderEntry): Promise<void> {
    if (e.kind === 'value') {
      this.values.set(e, e.value);
      return;
    }
    const create = (): unknown => e.create!(this.wideArgs(e));
    try {
      if (e.scope === 'process') {
        const v = await acquireProcessValue(e, create);
        this.acquired.push(e);
        this.values.set(e, v);
      } else {
        const v = await create();
        this.workerTeardowns.add(e, v);
        this.values.set(e, v);
      }
    } catch (err) {
      throw new DependencyResolutionError(e.token.name, null, err);
    }
  }

  /** The arguments of a wider-scoped factory (its dependencies are made already). */
  private wideArgs(e: ProviderEntry): Record<string, unknown> {
    const args: Record<string, unknown> = {};
    for (const [name, t] of e.inject) args[name] = this.values.get(this.providers.entry(t)!);
    return args;
  }

  private planFor(actor: AnyActor): ActorPlan {
    const steps: PlanStep[] = [];
    const stepOf = new Map<ProviderEntry, number>();
    const source = (name: string, t: Token<unknown>): ArgSource => {
      const e = this.providers.entry(t)!;
      if (e.kind === 'value') return { name, wide: true, value: e.value };
      if (e.scope !== 'job') return { name, wide: true, value: this.values.get(e) };
      let index = stepOf.get(e);
      if (index === undefined) {
        // Dependencies first: their steps come before this one's.
        const args = e.inject.map(([n, dep]) => source(n, dep));
        index = steps.length;
        steps.push({ entry: e, args });
        stepOf.set(e, index);
      }
      return { name, wide: false, index };
    };
    const args = Object.entries(actor.inject!).map(([name, t]) => source(name, t));
    const fixed =
      steps.length === 0
        ? Object.freeze(Object.fromEntries(args.map((a) => [a.name, (a as { value: unknown }).value])))
        : null;
    return { actor: actor.name, thread: actor.thread !== null, fixed, steps, args };
  }

  /** Process- and worker-scoped values a thread-isolated actor injects must survive a structured clone. */
  private checkThreadValues(): void {
    const problems: DependencyNotCloneable[] = [];
    for (const plan of this.plans.values()) {
      if (!plan.thread) continue;
      for (const a of plan.args) {
        if (!a.wide) continue;
        try {
          structuredClone(a.value);
        } catch (err) {
          problems.push(
            new DependencyNotCloneable(tokenNameOf(this.actors.get(plan.actor)!, a.name), plan.actor, err),
          );
        }
      }
    }
    if (problems.length === 1) throw problems[0]!;
    if (problems.length > 1) throw new DependencyValidationError(problems);
  }
}

/** The token an actor injects under `name`. */
export function tokenNameOf(actor: AnyActor, name: string): string {
  return actor.inject?.[name]?.name ?? name;
}
