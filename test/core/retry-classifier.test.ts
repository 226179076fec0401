/**
 * The retry classifier's fixed decision order (docs/retries.md, "What decides the outcome of an
 * attempt"; spec inventory §6.2), at unit level: `classifyFailure` is pure, so most cases call it
 * directly. Snooze / RetryAfter are decided by the runner before the classifier, so those cases
 * (and the end-to-end effect of a schema error or an unstorable result) run a worker on the
 * in-memory backend: no database involved.
 */
import { z } from 'zod';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { actor, type RetryClassifierHook } from '../../src/core/actor.js';
import { InMemoryBackend } from '../../src/backend/memory/in-memory-backend.js';
import { TaskQ } from '../../src/client/taskq.js';
import { PayloadValidationError, ResultTooLarge } from '../../src/errors/index.js';
import type { Logger } from '../../src/obs/logger.js';
import { RetryAfter, Snooze, StartToCloseTimeout } from '../../src/retry/control-flow.js';
import { classifyFailure } from '../../src/retry/retry-classifier.js';
import { isSchemaLibraryError } from '../../src/core/schema-validation.js';
import { silentLogger } from '../../src/obs/logger.js';
import { Worker } from '../../src/worker/worker.js';
import { waitFor } from '../helpers/wait.js';

class CardDeclined extends Error {}
class HardCardDeclined extends CardDeclined {}
class HttpError extends Error {
  constructor(readonly status: number) {
    super(`http ${status}`);
  }
}

interface LogLine {
  level: string;
  obj: object;
  msg?: string;
}
function recordingLogger(lines: LogLine[]): Logger {
  const at =
    (level: string) =>
    (obj: object, msg?: string): void => {
      lines.push({ level, obj, msg });
    };
  const logger: Logger = {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: () => logger,
  };
  return logger;
}

const OPTS = { maxRetryBackoffMs: 60_000, random: () => 0.5 };

/** An actor with a deterministic policy (no jitter): transient, 3 attempts, fixed 1 s backoff. */
function declare(options: {
  hook?: RetryClassifierHook;
  nonRetryableErrors?: (abstract new (...args: never[]) => unknown)[];
  kind?: 'transient' | 'indefinite' | 'nonRetryable';
}) {
  return actor(
    {
      name: 'classified',
      retry: { kind: options.kind ?? 'transient', maxAttempts: 3, backoff: 'fixed', base: '1s', jitter: 0 },
      ...(options.nonRetryableErrors ? { nonRetryableErrors: options.nonRetryableErrors } : {}),
      ...(options.hook ? { retryClassifier: options.hook } : {}),
    },
    async () => undefined,
  );
}

/** A ZodError exactly as a handler calling `schema.parse()` on bad input would throw it. */
function zodError(): unknown {
  try {
    z.object({ orderId: z.string() }).parse({ orderId: 42 });
  } catch (err) {
    return err;
  }
  throw new Error('expected parse to throw');
}

describe('classifyFailure: nonRetryableErrors versus the classifier hook', () => {
  it('fails an error listed in nonRetryableErrors without consulting the hook', () => {
    const hook = vi.fn<RetryClassifierHook>(() => ({ kind: 'indefinite', delay: 10 }));
    const a = declare({ nonRetryableErrors: [CardDeclined], hook });
    expect(classifyFailure(a, new CardDeclined('no'), 1, OPTS)).toEqual({
      kind: 'fail',
      errorClass: 'CardDeclined',
      retryable: false,
    });
    // Subclasses are listed too; the decision names the thrown class.
    expect(classifyFailure(a, new HardCardDeclined('no'), 1, OPTS)).toEqual({
      kind: 'fail',
      errorClass: 'HardCardDeclined',
      retryable: false,
    });
    expect(hook).not.toHaveBeenCalled();
  });

  it('matches an error rebuilt from a handler thread by its original class name', () => {
    const hook = vi.fn<RetryClassifierHook>(() => ({ kind: 'indefinite' }));
    const a = declare({ nonRetryableErrors: [CardDeclined], hook });
    const rebuilt = Object.assign(new Error('no'), { name: 'CardDeclined', originalClass: 'CardDeclined' });
    expect(classifyFailure(a, rebuilt, 1, OPTS)).toMatchObject({ kind: 'fail', retryable: false });
    expect(hook).not.toHaveBeenCalled();
  });

  it('lets the hook decide for errors that are not listed, with (error, attempt)', () => {
    const hook = vi.fn<RetryClassifierHook>((err) =>
      err instanceof HttpError && err.status === 404 ? { kind: 'nonRetryable' } : null,
    );
    const a = declare({ nonRetryableErrors: [CardDeclined], hook });
    const notFound = new HttpError(404);
    expect(classifyFailure(a, notFound, 1, OPTS)).toEqual({
      kind: 'fail',
      errorClass: 'HttpError',
      retryable: false,
    });
    expect(hook).toHaveBeenCalledWith(notFound, 1);
    // null: the static policy applies (transient, attempt 1 of 3, fixed 1 s).
    expect(classifyFailure(a, new HttpError(500), 1, OPTS)).toEqual({ kind: 'retry', delayMs: 1000 });
  });

  it("the hook's kind beats the policy's, and its delay is capped by maxRetryBackoff only", () => {
    const a = declare({ hook: () => ({ kind: 'indefinite', delay: '10m' }) });
    // Attempt 3 of a 3-attempt transient policy would fail; the hook's indefinite retries.
    expect(classifyFailure(a, new Error('x'), 3, OPTS)).toEqual({ kind: 'retry', delayMs: 60_000 });
    const b = declare({ kind: 'indefinite', hook: () => ({ kind: 'nonRetryable' }) });
    expect(classifyFailure(b, new Error('x'), 1, OPTS)).toMatchObject({ kind: 'fail', retryable: false });
    // A hook giving only a delay keeps the policy's kind.
    const c = declare({ hook: () => ({ delay: 250 }) });
    expect(classifyFailure(c, new Error('x'), 1, OPTS)).toEqual({ kind: 'retry', delayMs: 250 });
    expect(classifyFailure(c, new Error('x'), 3, OPTS)).toMatchObject({ kind: 'fail' });
  });

  it('falls back to the policy when the hook throws or returns a bad delay, and logs it', () => {
    const lines: LogLine[] = [];
    const logger = recordingLogger(lines);
    const throwing = declare({
      hook: () => {
        throw new Error('hook bug');
      },
    });
    expect(classifyFailure(throwing, new Error('x'), 1, { ...OPTS, logger })).toEqual({
      kind: 'retry',
      delayMs: 1000,
    });
    expect(classifyFailure(throwing, new Error('x'), 3, { ...OPTS, logger })).toMatchObject({ kind: 'fail' });
    const badDelay = declare({ hook: () => ({ kind: 'indefinite', delay: -5 }) });
    expect(classifyFailure(badDelay, new Error('x'), 3, { ...OPTS, logger })).toEqual({
      kind: 'retry',
      delayMs: 1000,
    });
    expect(lines.map((l) => l.msg)).toEqual([
      'retry-classifier-hook-failed',
      'retry-classifier-hook-failed',
      'retry-classifier-bad-delay',
    ]);
  });
});

describe('classifyFailure: errors that never reach the hook', () => {
  const everythingIndefinite = vi.fn<RetryClassifierHook>(() => ({ kind: 'indefinite', delay: 1 }));
  const a = declare({ kind: 'indefinite', hook: everythingIndefinite });
  afterEach(() => everythingIndefinite.mockClear());

  it('PayloadValidationError fails without retry even when the hook and policy would retry', () => {
    const err = new PayloadValidationError('payload for actor "classified" is invalid', {
      actor: 'classified',
    });
    expect(classifyFailure(a, err, 1, OPTS)).toEqual({
      kind: 'fail',
      errorClass: 'PayloadValidationError',
      retryable: false,
    });
    expect(everythingIndefinite).not.toHaveBeenCalled();
  });

  it('ResultTooLarge fails without retry', () => {
    expect(classifyFailure(a, new ResultTooLarge(1024, 4096), 1, OPTS)).toEqual({
      kind: 'fail',
      errorClass: 'ResultTooLarge',
      retryable: false,
    });
    expect(everythingIndefinite).not.toHaveBeenCalled();
  });

  it('a raw ZodError thrown by the handler fails as PayloadValidationError (inventory §6.2 step 4)', () => {
    expect(classifyFailure(a, zodError(), 1, OPTS)).toEqual({
      kind: 'fail',
      errorClass: 'PayloadValidationError',
      retryable: false,
    });
    expect(everythingIndefinite).not.toHaveBeenCalled();
  });

  it('so does any error carrying Standard Schema issues, and a schema error rebuilt from a thread', () => {
    // Valibot's ValiError (and other Standard Schema libraries) carry `issues` the same way.
    const valiLike = Object.assign(new Error('Invalid type'), {
      name: 'ValiError',
      issues: [{ kind: 'schema', message: 'Invalid type: Expected string', path: undefined }],
    });
    const fromThread = Object.assign(new Error('Invalid input'), {
      name: 'ZodError',
      originalClass: 'ZodError',
    });
    for (const err of [valiLike, fromThread]) {
      expect(classifyFailure(a, err, 1, OPTS)).toEqual({
        kind: 'fail',
        errorClass: 'PayloadValidationError',
        retryable: false,
      });
    }
    expect(everythingIndefinite).not.toHaveBeenCalled();
  });

  it('an error that merely has an `issues` field of another shape is classified normally', () => {
    const notSchema = [
      Object.assign(new Error('jira'), { issues: ['PROJ-1'] }),
      Object.assign(new Error('none'), { issues: [] }),
      Object.assign(new Error('github'), { issues: 3 }),
      Object.assign(new Error('thread'), { originalClass: 'TypeError', issues: [{ message: 'x' }] }),
    ];
    for (const err of notSchema) {
      expect(isSchemaLibraryError(err)).toBe(false);
      expect(classifyFailure(a, err, 1, OPTS)).toEqual({ kind: 'retry', delayMs: 1 });
    }
    expect(everythingIndefinite).toHaveBeenCalledTimes(notSchema.length);
    // A plain object with issues is not an Error at all.
    expect(isSchemaLibraryError({ issues: [{ message: 'x' }] })).toBe(false);
  });

  it('nonRetryableErrors still comes first: a listed schema error keeps its own class name', () => {
    const b = declare({ nonRetryableErrors: [z.ZodError], hook: everythingIndefinite });
    expect(classifyFailure(b, zodError(), 1, OPTS)).toEqual({
      kind: 'fail',
      errorClass: 'ZodError',
      retryable: false,
    });
  });

  it('StartToCloseTimeout is an ordinary error here: listed, hooked, or retried by the policy', () => {
    const transient = declare({});
    expect(classifyFailure(transient, new StartToCloseTimeout(50), 1, OPTS)).toEqual({
      kind: 'retry',
      delayMs: 1000,
    });
    const listed = declare({ nonRetryableErrors: [StartToCloseTimeout] });
    expect(classifyFailure(listed, new StartToCloseTimeout(50), 1, OPTS)).toMatchObject({ kind: 'fail' });
  });
});

describe('Snooze and RetryAfter are decided before the classifier (in-memory worker)', () => {
  it('ignore nonRetryableErrors, the hook and a nonRetryable policy', async () => {
    const backend = new InMemoryBackend();
    const client = new TaskQ(backend);
    const hook = vi.fn<RetryClassifierHook>(() => ({ kind: 'nonRetryable' }));
    let runs = 0;
    const stubborn = actor(
      {
        name: 'stubborn',
        queue: 'order',
        retry: { kind: 'nonRetryable' },
        nonRetryableErrors: [Snooze, RetryAfter],
        retryClassifier: hook,
      },
      async () => {
        runs++;
        if (runs === 1) throw new Snooze(0);
        if (runs === 2) throw new RetryAfter(0, { consumeBudget: false });
        if (runs === 3) throw new RetryAfter(0);
        return 'done';
      },
    );
    const worker = new Worker({
      actors: [stubborn],
      backend,
      settings: { pgDsn: null, queues: ['order'], maxConcurrency: 1, watchdogEnabled: false },
      logger: silentLogger,
    });
    await worker.start();
    try {
      const h = await client.enqueue(stubborn, {});
      await waitFor(async () => (await backend.get(h.jobId))?.status === 'succeeded', 10_000, 'success');
      const attempts = await h.attempts();
      // Snooze and RetryAfter(consumeBudget: false) give the attempt back; RetryAfter counts it.
      expect(attempts.map((x) => [x.attempt, x.outcome])).toEqual([
        [1, 'snoozed'],
        [1, 'retry_after'],
        [1, 'retry_after'],
        [2, 'succeeded'],
      ]);
      expect(hook).not.toHaveBeenCalled();
    } finally {
      await worker.stop();
      await client.close();
      await backend.close();
    }
  });
});

describe('through a worker (in-memory backend)', () => {
  it('fails a handler that throws a raw ZodError after one attempt, keeping ZodError as error_class', async () => {
    const backend = new InMemoryBackend();
    const client = new TaskQ(backend);
    const strict = actor(
      { name: 'strict', queue: 'zod', retry: { maxAttempts: 5, base: 0, jitter: 0 } },
      async () => {
        z.object({ orderId: z.string() }).parse({ orderId: 42 });
      },
    );
    const worker = new Worker({
      actors: [strict],
      backend,
      settings: { pgDsn: null, queues: ['zod'], maxConcurrency: 1, watchdogEnabled: false },
      logger: silentLogger,
    });
    await worker.start();
    try {
      const h = await client.enqueue(strict, {});
      await waitFor(async () => (await backend.get(h.jobId))?.status === 'failed', 10_000, 'failure');
      expect(await backend.get(h.jobId)).toMatchObject({ attempt: 1, errorClass: 'ZodError' });
      expect((await h.attempts()).map((x) => x.outcome)).toEqual(['failed']);
    } finally {
      await worker.stop();
      await client.close();
      await backend.close();
    }
  });

  it('fails a result holding a NUL character without retry (Postgres jsonb cannot store it)', async () => {
    const backend = new InMemoryBackend();
    const client = new TaskQ(backend);
    const nul = actor({ name: 'nul_result', queue: 'nul', retry: { maxAttempts: 5, base: 0 } }, async () => ({
      rows: ['ok', 'bad\u0000'],
    }));
    const worker = new Worker({
      actors: [nul],
      backend,
      settings: { pgDsn: null, queues: ['nul'], maxConcurrency: 1, watchdogEnabled: false },
      logger: silentLogger,
    });
    await worker.start();
    try {
      const h = await client.enqueue(nul, {});
      await waitFor(async () => (await backend.get(h.jobId))?.status === 'failed', 10_000, 'failure');
      const row = await backend.get(h.jobId);
      expect(row).toMatchObject({ attempt: 1, errorClass: 'PayloadValidationError', result: null });
      expect(row?.errorMessage).toContain('found in the string at result.rows[1]');
    } finally {
      await worker.stop();
      await client.close();
      await backend.close();
    }
  });
});
