/**
 * A misspelt option key is an error that names it, never a default left silently in force: the
 * option objects of actors, providers, retry control, cron specs, job handles, streams, the reclaim
 * feed and `ctx.progress` (the admin UI, rate limits, the worker and the drivers have files of their
 * own). Where a call reads or writes the database, the rejected call leaves it as it was.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { TaskQ } from '../../src/client/taskq.js';
import { checkCronSpec } from '../../src/cron/cron-spec.js';
import { Providers } from '../../src/di/providers.js';
import { token } from '../../src/di/token.js';
import { DIError } from '../../src/errors/di-errors.js';
import type { InvalidArgumentError } from '../../src/errors/invalid-argument-error.js';
import { SettingsError } from '../../src/settings/settings-error.js';
import { RedisLiveProgress } from '../../src/progress/redis-live-progress.js';
import { RetryAfter } from '../../src/retry/control-flow.js';
import { classifyFailure } from '../../src/retry/retry-classifier.js';
import { silentLogger } from '../../src/obs/logger.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { startTestWorker } from '../helpers/in-process-worker.js';
import { recordingLogger } from '../helpers/log-records.js';
import { waitFor } from '../helpers/wait.js';
import { errorOf, expectRejected } from '../helpers/rejections.js';

const noop = async (): Promise<void> => undefined;

describe('declarations and pure helpers', () => {
  it('actor(): a misspelt top-level option says which one it was meant to be', async () => {
    await expectRejected(
      () => actor({ name: 'a', maxConcurent: 2 } as never, noop),
      'actor.maxConcurent',
      'maxConcurrent',
    );
  });

  it('actor().thread: a misspelt field is refused, not replaced by the default export', async () => {
    await expectRejected(
      () => actor({ name: 'a', thread: { module: '/tmp/x.js', exprtName: 'run' } as never }, noop),
      'actor(a).thread.exprtName',
      'exportName',
    );
  });

  it('actor().rateLimits: an object entry must name its limit', async () => {
    await expectRejected(
      () => actor({ name: 'a', rateLimits: [{ nme: 'x' } as never] }, noop),
      'actor(a).rateLimits[0]',
    );
    expect(
      actor({ name: 'a', rateLimits: [{ name: 'x' }, { baseName: 'y' }] }, noop).rateLimits,
    ).toHaveLength(2);
  });

  it('Providers: a misspelt value or factory option is a DIError naming it', () => {
    const T = token<number>('T');
    expect(() => new Providers().value(T, 1, { scoop: 'job' } as never)).toThrow(DIError);
    expect(() => new Providers().value(T, 1, { scoop: 'job' } as never)).toThrow(
      /providers\.value\(T\)\.scoop.*did you mean scope\?/,
    );
    expect(() => new Providers().factory(T, { scope: 'worker', disposer: noop } as never, () => 1)).toThrow(
      /providers\.factory\(T\)\.disposer.*did you mean dispose\?/,
    );
    expect(() => new Providers().factory(T, { scope: 'worker', injects: {} } as never, () => 1)).toThrow(
      /providers\.factory\(T\)\.injects.*did you mean inject\?/,
    );
    expect(new Providers().factory(T, { scope: 'job', inject: {}, dispose: noop }, () => 1).has(T)).toBe(
      true,
    );
  });

  it('RetryAfter: a misspelt option is refused, and consumeBudget must be a boolean', async () => {
    await expectRejected(
      () => new RetryAfter(1000, { consumeBuget: false } as never),
      'RetryAfter.options.consumeBuget',
      'consumeBudget',
    );
    await expectRejected(
      () => new RetryAfter(1000, { consumeBudget: 'no' } as never),
      'RetryAfter.options.consumeBudget',
    );
    expect(new RetryAfter(1000, { consumeBudget: false }).consumeBudget).toBe(false);
  });

  it('classifyFailure: a misspelt option is refused', async () => {
    const a = actor({ name: 'cf', retry: { base: 1000, jitter: 0 } }, noop);
    await expectRejected(
      () => classifyFailure(a, new Error('x'), 1, { maxRetryBackofMs: 1 } as never),
      'classifyFailure.options.maxRetryBackofMs',
      'maxRetryBackoffMs',
    );
  });

  it("a retryClassifier's override with a misspelt key or an unknown kind is logged and the policy applies", () => {
    const { logger, records } = recordingLogger();
    const opts = { maxRetryBackoffMs: 86_400_000, logger };
    const misspelt = actor(
      { name: 'rc_key', retry: { base: 1000, jitter: 0 }, retryClassifier: () => ({ delayMs: 99 }) as never },
      noop,
    );
    expect(classifyFailure(misspelt, new Error('x'), 1, opts)).toEqual({ kind: 'retry', delayMs: 1000 });
    const badKind = actor(
      {
        name: 'rc_kind',
        retry: { base: 1000, jitter: 0 },
        retryClassifier: () => ({ kind: 'later' }) as never,
      },
      noop,
    );
    expect(classifyFailure(badKind, new Error('x'), 1, opts)).toEqual({ kind: 'retry', delayMs: 1000 });
    expect(records.map((r) => r.msg)).toEqual([
      'retry-classifier-hook-failed',
      'retry-classifier-hook-failed',
    ]);
    expect(String(records[0]?.obj.err)).toMatch(/delayMs.*did you mean delay\?/);
    expect((records[1]?.obj.err as InvalidArgumentError).field).toBe(
      'actor(rc_kind).retryClassifier() result.kind',
    );
  });

  it('checkCronSpec: `timeZone` for `timezone` is refused instead of firing on UTC', async () => {
    await expectRejected(
      () => checkCronSpec({ expression: '0 2 * * *', timeZone: 'Europe/Berlin' } as never, 'schedule'),
      'schedule.timeZone',
      'timezone',
    );
  });

  it('RedisLiveProgress: a misspelt option is refused before the client is touched', async () => {
    await expectRejected(
      () => new RedisLiveProgress({} as never, 'taskq', { ownd: true, logger: silentLogger } as never),
      'RedisLiveProgress.options.ownd',
      'owned',
    );
  });
});

describe('a client on Postgres', () => {
  let db: TestSchema;
  let tq: TaskQ;
  const probe = actor({ name: 'uok_probe', queue: 'uok', retry: { kind: 'nonRetryable' } }, noop);

  beforeAll(async () => {
    db = await migratedSchema('uok');
    tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
  });

  afterAll(async () => {
    await tq?.close();
    await db?.drop();
  });

  it('TaskQ.fromSettings refuses a hand-built settings object with a misspelt key', async () => {
    const err = await errorOf(() => TaskQ.fromSettings({ pgDsn: TEST_DSN, schem: db.schema } as never));
    expect(err).toBeInstanceOf(SettingsError);
    expect(String(err)).toMatch(/schem.*did you mean schema\?/);
  });

  it('JobHandle.wait, stream, progressStream and watchReclaims refuse misspelt options', async () => {
    const job = await tq.enqueue(probe, {});
    await expectRejected(() => job.wait({ timeoutMs: 50 } as never), 'wait.options.timeoutMs', 'timeout');
    await expectRejected(
      () => tq.stream(job.jobId, { pollTimout: 5 } as never),
      'stream.options.pollTimout',
      'pollTimeout',
    );
    await expectRejected(
      () => tq.progressStream(job.jobId, { pollIntervall: 5 } as never),
      'progressStream.options.pollIntervall',
      'pollInterval',
    );
    await expectRejected(
      () => tq.watchReclaims({ afterID: '5' } as never).next(),
      'watchReclaims.options.afterID',
      'afterId',
    );
    expect((await tq.getRow(job.jobId))?.status).toBe('pending');
  });
});

describe('ctx.progress in a real worker', () => {
  let db: TestSchema;

  beforeAll(async () => {
    db = await migratedSchema('uokp');
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('a misspelt field fails the report (and here the attempt), recording no progress', async () => {
    const reporter = actor(
      { name: 'uok_progress', queue: 'uokp', retry: { kind: 'nonRetryable' } },
      async (_p, ctx) => {
        await ctx.progress({ precent: 50 } as never);
      },
    );
    const tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
    const worker = await startTestWorker([reporter], db.schema, { queues: ['uokp'] });
    try {
      const job = await tq.enqueue(reporter, {});
      await waitFor(async () => (await tq.getRow(job.jobId))?.status === 'failed');
      const row = await tq.getRow(job.jobId);
      expect(row?.errorClass).toBe('InvalidArgumentError');
      expect(row?.errorMessage).toMatch(/ctx\.progress\.precent.*did you mean percent\?/);
      expect(row?.progressState ?? {}).toEqual({});
    } finally {
      await worker.stop();
      await tq.close();
    }
  });
});
