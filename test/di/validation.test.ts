/**
 * Startup validation of a worker's dependencies, and malformed declarations: exact messages for a
 * cycle (with its path), a scope violation, a missing provider (with who needs it), and several at
 * once. Pure: nothing connects (the Worker validates in its constructor).
 */
import { describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { Providers } from '../../src/di/providers.js';
import { token, type InjectMap } from '../../src/di/token.js';
import { dependencyProblems, validateDependencies } from '../../src/di/validate-dependencies.js';
import {
  DependencyCycle,
  DependencyValidationError,
  DIError,
  MissingProvider,
  ScopeViolation,
} from '../../src/errors/index.js';
import { silentLogger } from '../../src/obs/logger.js';
import { Worker } from '../../src/worker/worker.js';

const A = token<string>('A');
const B = token<string>('B');
const C = token<string>('C');
const Db = token<{ query(): void }>('Db');
const Tx = token<number>('Tx');

const uses = (name: string, inject: InjectMap) => actor({ name, inject }, async () => undefined);

interface Case {
  name: string;
  providers: () => Providers | null;
  actors: ReturnType<typeof uses>[];
  error: new (...args: never[]) => Error;
  message: string;
}

const CASES: Case[] = [
  {
    name: 'a cycle, with its path',
    providers: () =>
      new Providers()
        .factory(A, { scope: 'worker', inject: { b: B } }, ({ b }) => b)
        .factory(B, { scope: 'worker', inject: { c: C } }, ({ c }) => c)
        .factory(C, { scope: 'worker', inject: { a: A } }, ({ a }) => a),
    actors: [],
    error: DependencyCycle,
    message:
      'dependency cycle: A -> B -> C -> A: a provider cannot depend on itself, even through others; ' +
      'remove one of these injections',
  },
  {
    name: 'a provider injecting itself',
    providers: () => new Providers().factory(A, { scope: 'job', inject: { a: A } }, ({ a }) => a),
    actors: [],
    error: DependencyCycle,
    message:
      'dependency cycle: A -> A: a provider cannot depend on itself, even through others; ' +
      'remove one of these injections',
  },
  {
    name: 'a scope violation',
    providers: () =>
      new Providers()
        .factory(Tx, { scope: 'job' }, () => 1)
        .factory(Db, { scope: 'process', inject: { tx: Tx } }, () => ({ query() {} })),
    actors: [],
    error: ScopeViolation,
    message:
      'process-scoped Db depends on job-scoped Tx: a value cannot hold one that is torn down before it; ' +
      'make Db job-scoped, or Tx process-scoped or wider',
  },
  {
    name: 'a missing provider, with the actor that needs it',
    providers: () => new Providers(),
    actors: [uses('send_email', { db: A })],
    error: MissingProvider,
    message:
      'no provider registered for A (required by actor "send_email"): register one ' +
      '(providers.value(token, value) or providers.factory(token, { scope }, create)) in the Providers passed to the worker',
  },
  {
    name: 'missing providers, needed by a provider and by a worker without providers',
    providers: () => null,
    actors: [uses('a1', { x: A }), uses('a2', { y: B, z: A })],
    error: MissingProvider,
    message:
      'no provider registered for A (required by actor "a1"); no provider registered for B (required by actor "a2"); ' +
      'no provider registered for A (required by actor "a2"): register them ' +
      '(providers.value(token, value) or providers.factory(token, { scope }, create)) in the Providers passed to the worker',
  },
  {
    name: 'several problems at once',
    providers: () =>
      new Providers()
        .factory(A, { scope: 'worker', inject: { b: B } }, ({ b }) => b)
        .factory(B, { scope: 'worker', inject: { a: A } }, ({ a }) => a)
        .factory(Tx, { scope: 'job', inject: { c: C } }, () => 1)
        .factory(Db, { scope: 'worker', inject: { tx: Tx } }, () => ({ query() {} })),
    actors: [uses('report', { db: Db, cache: token<string>('Cache') })],
    error: DependencyValidationError,
    message:
      "the worker's dependencies have 3 problems: " +
      '(1) dependency cycle: A -> B -> A: a provider cannot depend on itself, even through others; remove one of these injections ' +
      '(2) worker-scoped Db depends on job-scoped Tx: a value cannot hold one that is torn down before it; make Db job-scoped, or Tx worker-scoped or wider ' +
      '(3) no provider registered for C (required by provider Tx); no provider registered for Cache (required by actor "report"): ' +
      'register them (providers.value(token, value) or providers.factory(token, { scope }, create)) in the Providers passed to the worker',
  },
];

describe('startup validation', () => {
  it.each(CASES)('$name', ({ providers, actors, error, message }) => {
    const p = providers();
    let thrown: unknown;
    try {
      validateDependencies(p, actors);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(error);
    expect((thrown as Error).message).toBe(message);
    // The Worker refuses the same way, in its constructor: before anything connects.
    expect(
      () =>
        new Worker({
          actors: actors.length > 0 ? actors : [actor({ name: 'plain' }, () => undefined)],
          ...(p ? { providers: p } : {}),
          logger: silentLogger,
          settings: { pgDsn: null, watchdogEnabled: false, healthEnabled: false },
        }),
    ).toThrow(message);
  });

  it('gives each problem its fields', () => {
    const problems = dependencyProblems(CASES[5]!.providers(), CASES[5]!.actors);
    expect(problems.map((p) => p.constructor.name)).toEqual([
      'DependencyCycle',
      'ScopeViolation',
      'MissingProvider',
    ]);
    expect((problems[0] as DependencyCycle).cyclePath).toEqual(['A', 'B', 'A']);
    expect(problems[1]).toMatchObject({
      fromScope: 'worker',
      toScope: 'job',
      tokenName: 'Tx',
      dependent: 'Db',
      code: 'TASKQ_SCOPE_VIOLATION',
    });
    expect((problems[2] as MissingProvider).missing).toEqual([
      { namespace: 'dependency', name: 'C', requiredBy: 'provider Tx', actor: null },
      { namespace: 'dependency', name: 'Cache', requiredBy: 'actor "report"', actor: 'report' },
    ]);
  });

  it('accepts a narrower scope depending on wider ones, and values of any scope', () => {
    const p = new Providers()
      .value(A, 'config')
      .factory(Db, { scope: 'process', inject: { a: A } }, () => ({ query() {} }))
      .factory(B, { scope: 'worker', inject: { db: Db } }, () => 'b')
      .factory(Tx, { scope: 'job', inject: { db: Db, b: B, a: A } }, () => 1);
    expect(dependencyProblems(p, [uses('ok', { tx: Tx, b: B })])).toEqual([]);
  });
});

describe('malformed declarations (DIError)', () => {
  it.each([
    [
      'a non-token in an actor inject',
      () => actor({ name: 'bad', inject: { db: 'Db' as never } }, async () => undefined),
      'actor(bad).inject.db: "Db" is not a token: make tokens with token<T>(\'Name\')',
    ],
    [
      'an inject that is not an object',
      () => actor({ name: 'bad', inject: [A] as never }, async () => undefined),
      'actor(bad).inject: an array must be an object of tokens, e.g. { db: Db }',
    ],
    [
      'a look-alike token',
      () => new Providers().value({ name: 'A' } as never, 1),
      "providers.value: an object is not a token: make tokens with token<T>('Name')",
    ],
    [
      'a token registered twice',
      () => new Providers().value(A, 'x').factory(A, { scope: 'job' }, () => 'y'),
      'A already has a provider: register each token once (use a second token for a second value)',
    ],
    [
      'an unknown scope',
      () => new Providers().factory(A, { scope: 'loop' as never }, () => 'y'),
      `providers.factory(A).scope: "loop" is not a scope: use 'process', 'worker' or 'job'`,
    ],
    [
      'a factory that is not a function',
      () => new Providers().factory(A, { scope: 'job' }, 'make' as never),
      'providers.factory(A): the factory must be a function',
    ],
    [
      'a non-token in a factory inject',
      () => new Providers().factory(A, { scope: 'job', inject: { b: 3 as never } }, () => 'y'),
      "providers.factory(A).inject.b: 3 is not a token: make tokens with token<T>('Name')",
    ],
  ])('%s', (_name, declare, message) => {
    expect(declare).toThrow(DIError);
    expect(declare).toThrow(message);
  });

  it('run() of an injecting actor asks for its values', async () => {
    const a = actor({ name: 'needs', inject: { a: A } }, async (_p, _c, { a }) => a);
    await expect(a.run(undefined, {} as never)).rejects.toThrow(
      'actor "needs" injects a: pass them to run(payload, ctx, deps)',
    );
    expect(await a.run(undefined, {} as never, { a: 'given' })).toBe('given');
  });
});
