/**
 * The startup validation of a worker's dependencies: cycles (with their path), scope violations and
 * missing providers (with who needs them), all found in one pass so that one failed start lists
 * every problem.
 */
import type { AnyActor } from '../core/actor.js';
import {
  DependencyCycle,
  DependencyValidationError,
  ScopeViolation,
  type DependencyProblem,
} from '../errors/di-errors.js';
import { MissingProvider, type MissingDependencyEntry } from '../errors/missing-provider-error.js';
import type { ProviderEntry, Providers } from './providers.js';
import { scopeRank } from './scope.js';

/** Every problem of `providers` serving `actors`: cycles, then scope violations, then missing providers. */
export function dependencyProblems(
  providers: Providers | null,
  actors: Iterable<AnyActor>,
): DependencyProblem[] {
  const entries = providers?.entries() ?? [];
  const problems: DependencyProblem[] = findCycles(entries, providers).map(
    (path) => new DependencyCycle(path),
  );
  const missing: MissingDependencyEntry[] = [];
  for (const e of entries) {
    for (const [, t] of e.inject) {
      const dep = providers!.entry(t);
      const requiredBy = `provider ${e.token.name}`;
      if (!dep) missing.push({ namespace: 'dependency', name: t.name, requiredBy, actor: null });
      else if (scopeRank(dep.scope) > scopeRank(e.scope))
        problems.push(
          new ScopeViolation({
            fromScope: e.scope,
            toScope: dep.scope,
            tokenName: t.name,
            dependent: e.token.name,
          }),
        );
    }
  }
  for (const a of actors) {
    for (const t of Object.values(a.inject ?? {})) {
      if (!providers?.has(t))
        missing.push({
          namespace: 'dependency',
          name: t.name,
          requiredBy: `actor ${JSON.stringify(a.name)}`,
          actor: a.name,
        });
    }
  }
  if (missing.length > 0) problems.push(new MissingProvider(missing));
  return problems;
}

/**
 * Throws when the validation finds anything: the problem itself when there is one, else a
 * `DependencyValidationError` listing them all.
 */
export function validateDependencies(providers: Providers | null, actors: Iterable<AnyActor>): void {
  const problems = dependencyProblems(providers, actors);
  if (problems.length === 1) throw problems[0]!;
  if (problems.length > 1) throw new DependencyValidationError(problems);
}

/**
 * Each cycle once, as token names with the first repeated at the end. A depth-first walk: an edge
 * back to a token on the current path closes a cycle; cycles found again from another start (a
 * rotation of the same tokens) are skipped.
 */
function findCycles(entries: readonly ProviderEntry[], providers: Providers | null): string[][] {
  const done = new Set<ProviderEntry>();
  const path: ProviderEntry[] = [];
  const onPath = new Set<ProviderEntry>();
  const seen = new Set<string>();
  const cycles: string[][] = [];
  const visit = (e: ProviderEntry): void => {
    path.push(e);
    onPath.add(e);
    for (const [, t] of e.inject) {
      const dep = providers!.entry(t);
      if (!dep) continue;
      if (onPath.has(dep)) {
        const cycle = path.slice(path.indexOf(dep));
        const key = [...cycle]
          .sort((a, b) => entries.indexOf(a) - entries.indexOf(b))
          .map((c) => entries.indexOf(c))
          .join(',');
        if (!seen.has(key)) {
          seen.add(key);
          cycles.push([...cycle, dep].map((c) => c.token.name));
        }
      } else if (!done.has(dep)) visit(dep);
    }
    path.pop();
    onPath.delete(e);
    done.add(e);
  };
  for (const e of entries) if (!done.has(e)) visit(e);
  return cycles;
}

/** Entries in an order where every entry comes after the entries it injects (the graph is acyclic). */
export function creationOrder(entries: readonly ProviderEntry[], providers: Providers): ProviderEntry[] {
  const out: ProviderEntry[] = [];
  const placed = new Set<ProviderEntry>();
  const place = (e: ProviderEntry): void => {
    if (placed.has(e)) return;
    placed.add(e);
    for (const [, t] of e.inject) place(providers.entry(t)!);
    out.push(e);
  };
  for (const e of entries) place(e);
  return out;
}
