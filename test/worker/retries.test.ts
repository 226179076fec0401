/**
 * Retries end to end: one in-process Worker against real Postgres. Retry kinds and budgets, backoff
 * shapes, the classifier hook, Snooze / RetryAfter, deadlines, startToClose, payload and result
 * validation, result size, and the success / exhaustion hooks with the ErrorReporter.
 *
 * Delays are tens of milliseconds: a failed attempt lands `scheduled` and the worker's own
 * maintenance leader promotes it when due (it is woken on every reschedule), so retries run fast.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { AttemptRow, JobRow } from '../../src/backend/types.js';
import type { JobHandle } from '../../src/client/job-handle.js';
import { TaskQ } from '../../src/client/taskq.js';
import { JobFailed, PayloadValidationError, ResultTooLarge } from '../../src/errors/index.js';
import { newJobId } from '../../src/core/ids.js';
import { StartToCloseTimeout } from '../../src/retry/control-flow.js';
import { wakeChannel } from '../../src/core/schema-name.js';
import { Worker } from '../../src/worker/worker.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';
import {
  QUEUE,
  logLines,
  recordingLogger,
  successCalls,
  exhaustedCalls,
  reports,
  record,
  callsOf,
  seenAttempts,
  scheduledDelays,
  BoomError,
  alwaysFails,
  failsTwice,
  exponential,
  linear,
  fixed,
  capped,
  indefinite,
  nonRetryable,
  permanent,
  classified,
  classifierThrowsCalls,
  classifierThrows,
  snoozer,
  retryAfterConsuming,
  retryAfterFree,
  deadlined,
  validatedCalls,
  asyncValidated,
  asyncValidatedCalls,
  abortReasons,
  shortLimit,
  longLimit,
  badResult,
  unstorableResult,
  sized,
  withSuccessHook,
  exhausting,
  successHookThrows,
  successHookHangs,
  exhaustedHookThrows,
  exhaustedHookHangs,
  ALL_ACTORS,
  useRetryFixtureDb,
} from '../fixtures/retry-actors.js';

let db: TestSchema;
let tq: TaskQ;
let worker: Worker;
let started = false;

// ---------------------------------------------------------------------------------------------
// Helpers.
// ---------------------------------------------------------------------------------------------

/** Waits for the job to fail for good and returns the terminal row carried by JobFailed. */
async function failure(h: JobHandle<unknown>): Promise<JobRow> {
  const err = await h.wait({ timeout: '10s' }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(JobFailed);
  return (err as JobFailed).row;
}

const outcomes = (attempts: readonly AttemptRow[]): [number, string][] =>
  attempts.map((a) => [a.attempt, a.outcome]);

/** Milliseconds between consecutive attempt start times. */
function startGaps(attempts: readonly AttemptRow[]): number[] {
  const starts = attempts.map((a) => a.startedAt!.getTime());
  return starts.slice(1).map((t, i) => t - starts[i]!);
}

/**
 * Tolerance of {@link readScheduledDelay}: the attempt row's `finished_at` is read a moment after
 * the `clock_timestamp()` that `scheduled_at` was computed from (same statement), so the measure
 * is the delay minus that moment: well under a millisecond on a quiet database, but 5–10 ms seen
 * on a loaded two-core machine (one statement settles a batch). 20 ms still tells 40 from 80 from 160.
 */
const DELAY_TOLERANCE_MS = 20;
function expectScheduled(actualMs: number, expectedMs: number): void {
  expect(actualMs).toBeGreaterThan(expectedMs - DELAY_TOLERANCE_MS);
  expect(actualMs).toBeLessThanOrEqual(expectedMs + 1);
}

/** Slack for the promoter and dispatcher between a retry falling due and its handler starting. */
const PROMOTION_SLACK_MS = 5000;

beforeAll(async () => {
  db = await migratedSchema('rt');
  useRetryFixtureDb(db);
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
  worker = new Worker({
    actors: ALL_ACTORS,
    settings: {
      pgDsn: TEST_DSN,
      schema: db.schema,
      queues: [QUEUE],
      maxConcurrency: 8,
      resultMaxBytes: 1024,
      heartbeatInterval: '1s',
      lockLease: '10s',
      cancellationGracePeriod: '1s',
      cleanupGracePeriod: '1s',
      terminationGracePeriod: '10s',
      watchdogEnabled: false,
    },
    logger: recordingLogger(),
    errorReporter: { report: (row, error) => record(reports, row, error) },
  });
  await worker.start();
  started = true;
});

afterAll(async () => {
  // A worker whose start() threw is not stopped (stop() would wait for it to finish starting).
  if (started) await worker.stop();
  await tq?.close();
  await db?.drop();
});

// ---------------------------------------------------------------------------------------------
// Tests.
// ---------------------------------------------------------------------------------------------

describe('transient retries', () => {
  it('a handler that always throws fails after exactly maxAttempts attempts', async () => {
    const h = await tq.enqueue(alwaysFails, {});
    const row = await failure(h);
    expect(row).toMatchObject({
      status: 'failed',
      attempt: 3,
      maxAttempts: 3,
      errorClass: 'BoomError',
      errorMessage: 'boom 3',
    });
    const attempts = await h.attempts();
    expect(outcomes(attempts)).toEqual([
      [1, 'failed'],
      [2, 'failed'],
      [3, 'failed'],
    ]);
    expect(attempts.map((a) => a.errorMessage)).toEqual(['boom 1', 'boom 2', 'boom 3']);
    expect(attempts.every((a) => a.errorClass === 'BoomError')).toBe(true);
    expect(seenAttempts.get(h.jobId)).toEqual([1, 2, 3]);
  });

  it('a handler failing twice then succeeding ends succeeded after 3 attempts', async () => {
    const h = await tq.enqueue(failsTwice, {});
    expect(await h.wait({ timeout: '10s' })).toEqual({ attempt: 3 });
    expect(outcomes(await h.attempts())).toEqual([
      [1, 'failed'],
      [2, 'failed'],
      [3, 'succeeded'],
    ]);
    expect(await h.refresh()).toMatchObject({ status: 'succeeded', attempt: 3, errorClass: null });
    expect(callsOf(reports, h.jobId)).toEqual([]);
  });
});

describe('backoff shapes (jitter 0, base 40 ms)', () => {
  it('exponential, linear, fixed and capped delays between attempts', async () => {
    const cases = [
      { name: 'exponential', ref: exponential, expected: [40, 80, 160] },
      { name: 'linear', ref: linear, expected: [40, 80, 120] },
      { name: 'fixed', ref: fixed, expected: [40, 40, 40] },
      { name: 'exponential, cap 100', ref: capped, expected: [40, 80, 100, 100] },
    ];
    const handles = await Promise.all(cases.map((c) => tq.enqueue(c.ref, {})));
    await Promise.all(handles.map((h) => h.wait({ timeout: '15s' })));

    for (const [i, c] of cases.entries()) {
      const h = handles[i]!;
      const attempts = await h.attempts();
      expect(attempts.map((a) => a.outcome)).toEqual([...c.expected.map(() => 'failed'), 'succeeded']);
      const gaps = startGaps(attempts);
      const delays = scheduledDelays.get(h.jobId) ?? [];
      console.log(
        `backoff ${c.name}: expected ${c.expected.join(', ')} ms; ` +
          `scheduled ${delays.map((d) => d.toFixed(1)).join(', ')} ms; ` +
          `gaps between attempt starts ${gaps.join(', ')} ms`,
      );
      // What the database scheduled is the formula exactly (no jitter).
      expect(delays).toHaveLength(c.expected.length);
      delays.forEach((d, k) => expectScheduled(d, c.expected[k]!));
      // What the handler observed: at least the delay, plus the promoter's and dispatcher's latency.
      expect(gaps).toHaveLength(c.expected.length);
      gaps.forEach((g, k) => {
        expect(g).toBeGreaterThanOrEqual(c.expected[k]!);
        expect(g).toBeLessThan(c.expected[k]! + PROMOTION_SLACK_MS);
      });
    }
    // The shapes, on the scheduled delays: exponential doubles, linear adds the base, fixed stays.
    const d = (i: number): number[] => scheduledDelays.get(handles[i]!.jobId) ?? [];
    const [exp, lin, fix, cap] = [d(0), d(1), d(2), d(3)];
    exp.slice(1).forEach((x, k) => expect(Math.abs(x - 2 * exp[k]!)).toBeLessThan(DELAY_TOLERANCE_MS * 2));
    lin.slice(1).forEach((x, k) => expect(Math.abs(x - lin[k]! - 40)).toBeLessThan(DELAY_TOLERANCE_MS));
    expect(Math.max(...fix) - Math.min(...fix)).toBeLessThan(DELAY_TOLERANCE_MS);
    expect(Math.max(...cap)).toBeLessThanOrEqual(101);
  });
});

describe('retry kinds', () => {
  it('indefinite keeps retrying past maxAttempts until the handler succeeds', async () => {
    const h = await tq.enqueue(indefinite, {});
    expect(await h.wait({ timeout: '10s' })).toBe(5);
    expect(outcomes(await h.attempts())).toEqual([
      [1, 'failed'],
      [2, 'failed'],
      [3, 'failed'],
      [4, 'failed'],
      [5, 'succeeded'],
    ]);
    expect(await h.refresh()).toMatchObject({ retryKind: 'indefinite', maxAttempts: 2, attempt: 5 });
  });

  it('nonRetryable fails after one attempt whatever maxAttempts says', async () => {
    const h = await tq.enqueue(nonRetryable, {});
    expect(await failure(h)).toMatchObject({ status: 'failed', attempt: 1, errorClass: 'BoomError' });
    expect(outcomes(await h.attempts())).toEqual([[1, 'failed']]);
  });

  it('nonRetryableErrors: a listed class (or a subclass) fails at once; other errors still retry', async () => {
    const h1 = await tq.enqueue(permanent, { transientFirst: false });
    expect(await failure(h1)).toMatchObject({ attempt: 1, errorClass: 'PermanentError' });
    expect(outcomes(await h1.attempts())).toEqual([[1, 'failed']]);

    const h2 = await tq.enqueue(permanent, { transientFirst: true });
    expect(await failure(h2)).toMatchObject({ attempt: 2, errorClass: 'VeryPermanentError' });
    const attempts = await h2.attempts();
    expect(outcomes(attempts)).toEqual([
      [1, 'failed'],
      [2, 'failed'],
    ]);
    expect(attempts.map((a) => a.errorClass)).toEqual(['TypeError', 'VeryPermanentError']);
  });
});

describe('retryClassifier hook', () => {
  it('overrides the kind to nonRetryable for one error class', async () => {
    const h = await tq.enqueue(classified, { error: 'notFound' as const });
    expect(await failure(h)).toMatchObject({ attempt: 1, errorClass: 'NotFoundError' });
    expect(outcomes(await h.attempts())).toEqual([[1, 'failed']]);
  });

  it('overrides the delay (30 ms instead of the policy base of 10 s)', async () => {
    const h = await tq.enqueue(classified, { error: 'rateLimited' as const });
    expect(await h.wait({ timeout: '8s' })).toBe('served');
    expect(outcomes(await h.attempts())).toEqual([
      [1, 'failed'],
      [2, 'succeeded'],
    ]);
    const [delay] = scheduledDelays.get(h.jobId) ?? [];
    expect(delay).toBeDefined();
    expectScheduled(delay!, 30);
  });

  it('a classifier that throws falls back to the static policy (the job is still retried)', async () => {
    const before = logLines.length;
    const h = await tq.enqueue(classifierThrows, {});
    expect(await failure(h)).toMatchObject({
      attempt: 2,
      errorClass: 'TypeError',
      errorMessage: 'fails (2)',
    });
    expect(outcomes(await h.attempts())).toEqual([
      [1, 'failed'],
      [2, 'failed'],
    ]);
    expect(classifierThrowsCalls.slice(-2)).toEqual([1, 2]);
    const warned = logLines
      .slice(before)
      .filter((l) => l.msg === 'retry-classifier-hook-failed' && l.fields.actor === 'classifier_throws');
    expect(warned).toHaveLength(2);
  });
});

describe('Snooze and RetryAfter', () => {
  it('Snooze does not consume an attempt: ctx.attempt stays 1, attempt rows are snoozed', async () => {
    const h = await tq.enqueue(snoozer, {});
    // maxAttempts is 1: two snoozes and a success fit only if snoozes give the attempt back.
    expect(await h.wait({ timeout: '10s' })).toBe(3);
    expect(seenAttempts.get(h.jobId)).toEqual([1, 1, 1]);
    const attempts = await h.attempts();
    expect(outcomes(attempts)).toEqual([
      [1, 'snoozed'],
      [1, 'snoozed'],
      [1, 'succeeded'],
    ]);
    startGaps(attempts).forEach((g) => expect(g).toBeGreaterThanOrEqual(20));
    expect(await h.refresh()).toMatchObject({ status: 'succeeded', attempt: 1 });
  });

  it('RetryAfter (consumeBudget default true) uses attempts and fails with MaxAttemptsExceeded', async () => {
    const h = await tq.enqueue(retryAfterConsuming, {});
    expect(await failure(h)).toMatchObject({
      status: 'failed',
      attempt: 3,
      errorClass: 'MaxAttemptsExceeded',
    });
    expect(seenAttempts.get(h.jobId)).toEqual([1, 2, 3]);
    expect(outcomes(await h.attempts())).toEqual([
      [1, 'retry_after'],
      [2, 'retry_after'],
      [3, 'retry_after'],
    ]);
    // The handler's delay, not the policy's 5 s backoff.
    const delays = scheduledDelays.get(h.jobId) ?? [];
    expect(delays).toHaveLength(2);
    delays.forEach((d) => expectScheduled(d, 30));
  });

  it('RetryAfter with consumeBudget false gives the attempt back', async () => {
    const h = await tq.enqueue(retryAfterFree, {});
    // maxAttempts is 1: two RetryAfters and a success fit only if the attempt is given back.
    expect(await h.wait({ timeout: '10s' })).toBe('finally');
    expect(seenAttempts.get(h.jobId)).toEqual([1, 1, 1]);
    expect(outcomes(await h.attempts())).toEqual([
      [1, 'retry_after'],
      [1, 'retry_after'],
      [1, 'succeeded'],
    ]);
    const delays = scheduledDelays.get(h.jobId) ?? [];
    expect(delays).toHaveLength(2);
    delays.forEach((d) => expectScheduled(d, 30));
  });
});

describe('deadlines', () => {
  it('a retry that would start after retry.timeBudget fails the job with DeadlineExceeded', async () => {
    const h = await tq.enqueue(deadlined, {});
    expect(h.row.scheduleToClose).toBeInstanceOf(Date);
    expect(await failure(h)).toMatchObject({ status: 'failed', attempt: 1, errorClass: 'DeadlineExceeded' });
    const attempts = await h.attempts();
    expect(outcomes(attempts)).toEqual([[1, 'failed']]);
    // The attempt keeps the handler's own error; the job says why it was not retried.
    expect(attempts[0]!.errorClass).toBe('Error');
    expect(seenAttempts.get(h.jobId)).toEqual([1]);
  });
});

describe('payload validation at dispatch', () => {
  it('a stored payload violating the schema fails at once with PayloadValidationError', async () => {
    const id = newJobId();
    await db.pool.query(
      `INSERT INTO "${db.schema}".jobs (id, actor, queue, payload, status, max_attempts, retry_kind, scheduled_at)
       VALUES ($1, 'validated', $2, $3::jsonb, 'pending', 5, 'transient', clock_timestamp())`,
      [id, QUEUE, JSON.stringify({ n: 'not a number' })],
    );
    await db.pool.query('SELECT pg_notify($1, $2)', [wakeChannel(db.schema), '']);
    const h = await tq.get(id);
    expect(h).not.toBeNull();
    const row = await failure(h!);
    expect(row).toMatchObject({ status: 'failed', attempt: 1, errorClass: 'PayloadValidationError' });
    expect(row.errorMessage).toContain('payload');
    expect(row.errorMessage).not.toContain('not a number');
    expect(outcomes(await h!.attempts())).toEqual([[1, 'failed']]);
    expect(validatedCalls).toBe(0);
  });

  it("an asynchronous validator's output reaches the handler; a payload it rejects fails the job", async () => {
    const ok = await tq.enqueue(asyncValidated, { n: 21 });
    expect(await ok.wait({ timeout: '10s' })).toBe(42);

    const id = newJobId();
    await db.pool.query(
      `INSERT INTO "${db.schema}".jobs (id, actor, queue, payload, status, max_attempts, retry_kind, scheduled_at)
       VALUES ($1, 'async_validated', $2, $3::jsonb, 'pending', 5, 'transient', clock_timestamp())`,
      [id, QUEUE, JSON.stringify({ n: 1.5 })],
    );
    await db.pool.query('SELECT pg_notify($1, $2)', [wakeChannel(db.schema), '']);
    const bad = await tq.get(id);
    const row = await failure(bad!);
    expect(row).toMatchObject({ status: 'failed', attempt: 1, errorClass: 'PayloadValidationError' });
    expect(row.errorMessage).toContain('n: n must be an integer');
    expect(outcomes(await bad!.attempts())).toEqual([[1, 'failed']]);
    expect(asyncValidatedCalls).toBe(1);
  });
});

describe('startToClose', () => {
  it("the actor's limit aborts ctx.signal with StartToCloseTimeout; each attempt fails and is retried", async () => {
    const h = await tq.enqueue(shortLimit, { ms: 5000 });
    expect(await failure(h)).toMatchObject({
      status: 'failed',
      attempt: 2,
      errorClass: 'StartToCloseTimeout',
    });
    const attempts = await h.attempts();
    expect(outcomes(attempts)).toEqual([
      [1, 'failed'],
      [2, 'failed'],
    ]);
    expect(attempts.map((a) => a.errorClass)).toEqual(['StartToCloseTimeout', 'StartToCloseTimeout']);
    // The handlers stopped at the limit, not after their 5 s: each one's sleep ended with the abort.
    const reasons = abortReasons.get(h.jobId) ?? [];
    expect(reasons).toHaveLength(2);
    for (const r of reasons) expect(r).toBeInstanceOf(StartToCloseTimeout);
  });

  it('a per-enqueue startToClose beats the actor’s, both ways', async () => {
    // Longer than the actor's 100 ms: a 300 ms handler succeeds.
    const longer = await tq.enqueue(shortLimit, { ms: 300 }, { startToClose: '5s' });
    // Shorter than the actor's 10 s: a 5 s handler times out.
    const shorter = await tq.enqueue(longLimit, { ms: 5000 }, { startToClose: '100ms' });

    expect(await longer.wait({ timeout: '10s' })).toBe('slept 300 ms');
    expect(outcomes(await longer.attempts())).toEqual([[1, 'succeeded']]);
    expect(abortReasons.get(longer.jobId)).toEqual([null]);

    expect(await failure(shorter)).toMatchObject({ attempt: 1, errorClass: 'StartToCloseTimeout' });
    expect(outcomes(await shorter.attempts())).toEqual([[1, 'failed']]);
    expect(abortReasons.get(shorter.jobId)?.[0]).toBeInstanceOf(StartToCloseTimeout);
  });
});

describe('results', () => {
  it("a result failing the actor's result schema fails the job without retry", async () => {
    const h = await tq.enqueue(badResult, {});
    const row = await failure(h);
    expect(row).toMatchObject({ status: 'failed', attempt: 1, errorClass: 'PayloadValidationError' });
    expect(row.errorMessage).toContain('result');
    expect(outcomes(await h.attempts())).toEqual([[1, 'failed']]);
    expect(seenAttempts.get(h.jobId)).toEqual([1]);
  });

  it('a result holding NaN or a lone surrogate fails the job without retry, naming the path', async () => {
    for (const [kind, rule] of [
      ['nan', /NaN or Infinity.*found at result\.score/],
      ['surrogate', /valid Unicode.*found in the string at result\.label/],
    ] as const) {
      const h = await tq.enqueue(unstorableResult, { kind });
      const row = await failure(h);
      expect(row).toMatchObject({
        status: 'failed',
        attempt: 1,
        errorClass: 'PayloadValidationError',
        result: null,
      });
      expect(row.errorMessage).toMatch(rule);
      expect(outcomes(await h.attempts())).toEqual([[1, 'failed']]);
    }
  });

  it('a result larger than resultMaxBytes (1024) fails with ResultTooLarge, no retry', async () => {
    const big = await tq.enqueue(sized, { chars: 2000 });
    const row = await failure(big);
    expect(row).toMatchObject({ status: 'failed', attempt: 1, errorClass: 'ResultTooLarge', result: null });
    expect(row.errorMessage).toContain('1024');
    expect(outcomes(await big.attempts())).toEqual([[1, 'failed']]);

    // Just under the limit ({"blob":"…"} is 11 bytes of framing) is stored.
    const fits = await tq.enqueue(sized, { chars: 1024 - 11 });
    expect((await fits.wait({ timeout: '10s' })).blob).toHaveLength(1024 - 11);
    expect(await fits.refresh()).toMatchObject({ resultSizeBytes: 1024 });
  });

  it('onSuccess is called once with the row and the result', async () => {
    const h = await tq.enqueue(withSuccessHook, { n: 21 });
    expect(await h.wait({ timeout: '10s' })).toEqual({ doubled: 42 });
    await waitFor(() => callsOf(successCalls, h.jobId).length > 0, 5000, 'onSuccess');
    const calls = callsOf(successCalls, h.jobId);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.row).toMatchObject({
      id: h.jobId,
      actor: 'with_success_hook',
      status: 'succeeded',
      attempt: 1,
    });
    expect(calls[0]!.value).toEqual({ doubled: 42 });
    expect(callsOf(reports, h.jobId)).toEqual([]);
  });

  it('onRetryExhausted and the ErrorReporter are called once, when the job fails for good', async () => {
    const h = await tq.enqueue(exhausting, {});
    const final = await failure(h);
    await waitFor(() => callsOf(reports, h.jobId).length > 0, 5000, 'the error reporter');
    for (const calls of [callsOf(exhaustedCalls, h.jobId), callsOf(reports, h.jobId)]) {
      expect(calls).toHaveLength(1);
      const { row, value: error } = calls[0]!;
      expect(row).toMatchObject({
        id: h.jobId,
        status: 'failed',
        attempt: 2,
        errorClass: 'BoomError',
      });
      expect(row.attempt).toBe(final.attempt);
      expect(error).toBeInstanceOf(BoomError);
      expect((error as Error).message).toBe('boom 2');
    }
  });

  // The hooks and the reporter read the row as stored after the final write.
  it('the row given to onRetryExhausted and the reporter is the terminal row as stored', async () => {
    const h = await tq.enqueue(exhausting, {});
    const final = await failure(h);
    await waitFor(() => callsOf(reports, h.jobId).length > 0, 5000, 'the error reporter');
    for (const calls of [callsOf(exhaustedCalls, h.jobId), callsOf(reports, h.jobId)]) {
      const { row } = calls[0]!;
      expect({
        errorMessage: row.errorMessage,
        errorTraceback: row.errorTraceback,
        finishedAt: row.finishedAt,
        lockedByWorker: row.lockedByWorker,
        lockExpiresAt: row.lockExpiresAt,
      }).toEqual({
        errorMessage: 'boom 2',
        errorTraceback: final.errorTraceback,
        finishedAt: final.finishedAt,
        lockedByWorker: null,
        lockExpiresAt: null,
      });
    }
  });

  // A rejected result fails the job with its own error, which the hooks receive.
  it('the ErrorReporter gets the error that failed the result (ResultTooLarge, PayloadValidationError)', async () => {
    const big = await tq.enqueue(sized, { chars: 2000 });
    const bad = await tq.enqueue(badResult, {});
    await failure(big);
    await failure(bad);
    await waitFor(() => callsOf(reports, big.jobId).length > 0, 5000, 'the error reporter (big)');
    await waitFor(() => callsOf(reports, bad.jobId).length > 0, 5000, 'the error reporter (bad)');
    const bigError = callsOf(reports, big.jobId)[0]!.value;
    expect(bigError).toBeInstanceOf(ResultTooLarge);
    expect(bigError).toMatchObject({ limit: 1024 });
    expect(callsOf(reports, bad.jobId)[0]!.value).toBeInstanceOf(PayloadValidationError);
  });

  it('the ErrorReporter also gets non-retryable failures and deadline failures', async () => {
    const h = await tq.enqueue(nonRetryable, {});
    await failure(h);
    await waitFor(() => callsOf(reports, h.jobId).length > 0, 5000, 'the error reporter');
    expect(callsOf(reports, h.jobId)).toHaveLength(1);

    const d = await tq.enqueue(deadlined, {});
    await failure(d);
    await waitFor(() => callsOf(reports, d.jobId).length > 0, 5000, 'the error reporter');
    expect(callsOf(reports, d.jobId)[0]!.row).toMatchObject({
      status: 'failed',
      errorClass: 'DeadlineExceeded',
    });
  });

  it('an onSuccess hook that throws or hangs past its timeout does not affect the job', async () => {
    const throws = await tq.enqueue(successHookThrows, {});
    const hangs = await tq.enqueue(successHookHangs, {});
    expect(await throws.wait({ timeout: '10s' })).toBe('fine');
    expect(await hangs.wait({ timeout: '10s' })).toBe('fine');
    const hookFailed = (jobId: string) =>
      logLines.filter((l) => l.msg === 'hook-failed' && l.fields.jobId === jobId);
    await waitFor(() => hookFailed(throws.jobId).length > 0, 5000, 'hook-failed (throws)');
    await waitFor(() => hookFailed(hangs.jobId).length > 0, 5000, 'hook-failed (hangs)');
    expect(String(hookFailed(throws.jobId)[0]!.fields.err)).toContain('hook bug');
    expect(String(hookFailed(hangs.jobId)[0]!.fields.err)).toContain('timed out after 100 ms');
    for (const h of [throws, hangs]) {
      expect(await h.refresh()).toMatchObject({ status: 'succeeded', attempt: 1, result: 'fine' });
      expect(outcomes(await h.attempts())).toEqual([[1, 'succeeded']]);
    }
  });

  it('an onRetryExhausted hook that throws or hangs does not affect the job; the reporter still runs', async () => {
    const throws = await tq.enqueue(exhaustedHookThrows, {});
    const hangs = await tq.enqueue(exhaustedHookHangs, {});
    for (const h of [throws, hangs]) {
      expect(await failure(h)).toMatchObject({ status: 'failed', attempt: 1, errorClass: 'BoomError' });
      // The reporter runs after the hook: being called proves the hook was bounded.
      await waitFor(() => callsOf(reports, h.jobId).length > 0, 5000, 'the error reporter');
      expect(callsOf(reports, h.jobId)).toHaveLength(1);
      expect(await h.refresh()).toMatchObject({ status: 'failed', errorClass: 'BoomError' });
      expect(outcomes(await h.attempts())).toEqual([[1, 'failed']]);
    }
  });
});
