import { z } from 'zod';
import { describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { InvalidArgumentError } from '../../src/errors/index.js';
import { RetryPolicy } from '../../src/retry/retry-policy.js';

const noop = async (): Promise<void> => undefined;

describe('actor()', () => {
  it('applies defaults and converts durations to milliseconds', () => {
    const a = actor(
      {
        name: 'a',
        payload: z.object({ x: z.number() }),
        resultTtl: '1h',
        uniqueFor: '5m',
        startToClose: 30_000,
      },
      noop,
    );
    expect(a).toMatchObject({
      name: 'a',
      queue: 'default',
      payloadSchemaVersion: 1,
      resultTtlMs: 3_600_000,
      uniqueForMs: 300_000,
      startToCloseMs: 30_000,
      singleton: false,
      maxConcurrent: null,
      maxPending: null,
      priority: 0,
      uniqueStates: ['pending', 'scheduled', 'running'],
      onSuccessTimeoutMs: 3000,
      onRetryExhaustedTimeoutMs: 3000,
    });
    expect(a.retry).toBeInstanceOf(RetryPolicy);
    expect(a.retry).toMatchObject({
      kind: 'transient',
      maxAttempts: 3,
      backoff: 'exponential',
      baseMs: 5000,
      capMs: 3_600_000,
      jitter: 0.2,
      timeBudgetMs: null,
    });
    expect(Object.isFrozen(a)).toBe(true);
  });

  it('accepts maxConcurrent 0 (emergency drain) and every documented option', () => {
    class Permanent extends Error {}
    const a = actor(
      {
        name: 'full.actor:v2',
        queue: 'q-1',
        maxConcurrent: 0,
        maxPending: 10,
        singleton: true,
        metadata: { team: 'core' },
        uniqueStates: ['pending'],
        heartbeatTimeout: '10s',
        rateLimits: ['api'],
        reservations: ['slots'],
        nonRetryableErrors: [Permanent],
        retryClassifier: () => null,
        onRetryExhausted: () => undefined,
        onRetryExhaustedTimeout: '1s',
        onSuccess: () => undefined,
        onSuccessTimeout: 500,
        priority: -3,
        payloadSchemaVersion: 2,
        retry: { kind: 'indefinite', backoff: 'linear', base: '1s', cap: '1m', jitter: 0 },
      },
      noop,
    );
    expect(a.maxConcurrent).toBe(0);
    expect(a.nonRetryableErrors).toEqual([Permanent]);
    expect(a.retry.kind).toBe('indefinite');
  });

  it.each([
    ['missing name', { name: undefined }, 'actor.name'],
    ['bad name', { name: 'has space' }, 'actor.name'],
    ['bad queue', { name: 'a', queue: '' }, 'actor(a).queue'],
    ['negative maxConcurrent', { name: 'a', maxConcurrent: -1 }, 'actor(a).maxConcurrent'],
    ['fractional maxPending', { name: 'a', maxPending: 1.5 }, 'actor(a).maxPending'],
    ['metadata as a Map', { name: 'a', metadata: new Map() }, 'actor(a).metadata'],
    ['metadata as an array', { name: 'a', metadata: [] }, 'actor(a).metadata'],
    ['bad duration', { name: 'a', startToClose: '10 weeks' }, 'actor(a).startToClose'],
    ['zero uniqueFor', { name: 'a', uniqueFor: 0 }, 'actor(a).uniqueFor'],
    ['negative resultTtl', { name: 'a', resultTtl: -1 }, 'actor(a).resultTtl'],
    ['unknown unique state', { name: 'a', uniqueStates: ['waiting'] }, 'actor(a).uniqueStates'],
    ['empty unique states', { name: 'a', uniqueStates: [] }, 'actor(a).uniqueStates'],
    ['payload not a schema', { name: 'a', payload: { parse: () => 1 } }, 'actor(a).payload'],
    ['result not a schema', { name: 'a', result: 'string' }, 'actor(a).result'],
    ['retry maxAttempts 0', { name: 'a', retry: { maxAttempts: 0 } }, 'actor(a).retry.maxAttempts'],
    ['retry jitter 2', { name: 'a', retry: { jitter: 2 } }, 'actor(a).retry.jitter'],
    ['retry unknown kind', { name: 'a', retry: { kind: 'sometimes' } }, 'actor(a).retry.kind'],
    ['retry unknown backoff', { name: 'a', retry: { backoff: 'random' } }, 'actor(a).retry.backoff'],
    ['retry unknown option', { name: 'a', retry: { baseMs: 100 } }, 'actor(a).retry.baseMs'],
    [
      'nonRetryableErrors not classes',
      { name: 'a', nonRetryableErrors: ['Error'] },
      'actor(a).nonRetryableErrors',
    ],
    ['hook not a function', { name: 'a', onSuccess: 'x' }, 'actor(a).onSuccess'],
    ['empty rate limit name', { name: 'a', rateLimits: [' '] }, 'actor(a).rateLimits[0]'],
    ['priority not an integer', { name: 'a', priority: 0.5 }, 'actor(a).priority'],
    ['singleton not a boolean', { name: 'a', singleton: 'yes' }, 'actor(a).singleton'],
    ['unknown option', { name: 'a', maxConcurency: 3 }, 'actor.maxConcurency'],
  ])('rejects %s at declaration, naming the field', (_label, options, field) => {
    let err: unknown;
    try {
      actor(options as never, noop);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as InvalidArgumentError).field).toBe(field);
  });

  it('names the retry option a misspelt one was meant to be', () => {
    expect(() => actor({ name: 'a', retry: { baseMs: 100 } as never }, noop)).toThrow(/did you mean base\?/);
    expect(() => new RetryPolicy({ maxAttempt: 2 } as never)).toThrow(
      /retry\.maxAttempt.*did you mean maxAttempts\?/,
    );
  });

  it('rejects a missing handler', () => {
    expect(() => actor({ name: 'a' }, undefined as never)).toThrow(/handler/);
  });

  it('runs the handler in-process with run()', async () => {
    const a = actor({ name: 'adder', payload: z.object({ x: z.number() }) }, async (p) => p.x + 1);
    expect(await a.run({ x: 1 }, {} as never)).toBe(2);
  });
});

describe('RetryPolicy.delayMs', () => {
  const none = (): number => 0.5; // no jitter effect
  it('follows exponential, linear and fixed shapes, capped by the policy and the global maximum', () => {
    const exp = new RetryPolicy({ base: 1000, cap: 10_000, jitter: 0 });
    expect([1, 2, 3, 4, 5].map((n) => exp.delayMs(n, 86_400_000, none))).toEqual([
      1000, 2000, 4000, 8000, 10_000,
    ]);
    const lin = new RetryPolicy({ backoff: 'linear', base: 1000, jitter: 0 });
    expect([1, 2, 3].map((n) => lin.delayMs(n, 86_400_000, none))).toEqual([1000, 2000, 3000]);
    const fixed = new RetryPolicy({ backoff: 'fixed', base: 700, jitter: 0 });
    expect([1, 9].map((n) => fixed.delayMs(n, 86_400_000, none))).toEqual([700, 700]);
    expect(exp.delayMs(10, 3000, none)).toBe(3000);
  });

  it('spreads by ±jitter', () => {
    const p = new RetryPolicy({ base: 1000, jitter: 0.2 });
    expect(p.delayMs(1, 86_400_000, () => 0)).toBe(800);
    expect(p.delayMs(1, 86_400_000, () => 1)).toBe(1200);
  });
});
