/** The line each written outcome leaves (docs/logging.md, "What an attempt's outcome logs"). */
import { describe, expect, it } from 'vitest';

import type { Settlement, SettleResult } from '../../src/backend/worker-types.js';
import type { Logger } from '../../src/obs/logger.js';
import { logOutcome } from '../../src/worker/outcome-log.js';

type Entry = [level: string, msg: string, fields: Record<string, unknown>];

function recorder(): { log: Logger; entries: Entry[] } {
  const entries: Entry[] = [];
  const at =
    (level: string) =>
    (obj: object, msg?: string): void => {
      entries.push([level, msg ?? '', obj as Record<string, unknown>]);
    };
  const log: Logger = {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: () => log,
  };
  return { log, entries };
}

const base = { jobId: 'j1', workerId: 'w1', handlerStartedAt: null, durationMs: 1 };
const boom = { errorClass: 'Boom', message: 'it broke', traceback: 'Boom: it broke\n    at x' };
const result = (status: SettleResult['status'], errorClass: string | null = null): SettleResult => ({
  jobId: 'j1',
  status,
  errorClass,
});

/** The entries besides `job-settled` (which every outcome logs at debug). */
function lines(outcome: Settlement, res: SettleResult): Entry[] {
  const r = recorder();
  logOutcome(r.log, outcome, res);
  expect(r.entries[0]).toEqual(['debug', 'job-settled', { status: res.status, kind: outcome.kind }]);
  return r.entries.slice(1);
}

describe('logOutcome', () => {
  it('a success logs job-settled alone', () => {
    const ok: Settlement = {
      ...base,
      kind: 'succeeded',
      resultJson: '{"secret":1}',
      resultSizeBytes: 12,
      fallbackResultTtlMs: null,
    };
    expect(lines(ok, result('succeeded'))).toEqual([]);
  });

  it('a retried failure: job-attempt-failed at warn with the delay', () => {
    const [line] = lines(
      { ...base, kind: 'failed', error: boom, retryDelayMs: 250 },
      result('scheduled', 'Boom'),
    );
    expect(line![0]).toBe('warn');
    expect(line![1]).toBe('job-attempt-failed');
    expect(line![2]).toMatchObject({ errorClass: 'Boom', message: 'it broke', retryInMs: 250 });
    expect(Date.parse(line![2].retryAt as string)).not.toBeNaN();
  });

  it('a retry the write refused (deadline): job-failed at error, the job class beside the attempt class', () => {
    expect(
      lines(
        { ...base, kind: 'failed', error: boom, retryDelayMs: 250 },
        result('failed', 'DeadlineExceeded'),
      ),
    ).toEqual([
      [
        'error',
        'job-failed',
        { errorClass: 'Boom', message: 'it broke', jobErrorClass: 'DeadlineExceeded', stack: boom.traceback },
      ],
    ]);
  });

  it('RetryAfter at info; Snooze and denials at debug; a release at info; a cancel at info', () => {
    const reschedule = (outcome: 'snoozed' | 'retry_after' | 'rate_limit_denied'): Settlement => ({
      ...base,
      kind: 'reschedule',
      delayMs: 50,
      consumeBudget: outcome === 'retry_after',
      outcome,
      error: outcome === 'snoozed' ? null : { errorClass: 'RetryAfter', message: 'later', traceback: null },
    });
    expect(lines(reschedule('retry_after'), result('scheduled')).map((l) => [l[0], l[1]])).toEqual([
      ['info', 'job-retry-after'],
    ]);
    expect(lines(reschedule('snoozed'), result('scheduled')).map((l) => [l[0], l[1]])).toEqual([
      ['debug', 'job-snoozed'],
    ]);
    const [denied] = lines(reschedule('rate_limit_denied'), result('scheduled'));
    expect(denied!.slice(0, 2)).toEqual(['debug', 'job-denied']);
    expect(denied![2]).toMatchObject({ outcome: 'rate_limit_denied', retryInMs: 50 });
    expect(lines({ ...base, kind: 'release', error: null }, result('pending'))).toEqual([
      ['info', 'job-released', {}],
    ]);
    expect(
      lines(
        {
          ...base,
          kind: 'cancelled',
          error: { errorClass: 'CancelRequested', message: 'user asked', traceback: null },
        },
        result('cancelled'),
      ),
    ).toEqual([['info', 'job-cancelled', { message: 'user asked' }]]);
  });

  it('a transient job out of attempts after RetryAfter fails at error with the job class', () => {
    const [line] = lines(
      {
        ...base,
        kind: 'reschedule',
        delayMs: 50,
        consumeBudget: true,
        outcome: 'retry_after',
        error: { errorClass: 'RetryAfter', message: 'later', traceback: null },
      },
      result('failed', 'MaxAttemptsExceeded'),
    );
    expect(line).toEqual([
      'error',
      'job-failed',
      { errorClass: 'RetryAfter', message: 'later', jobErrorClass: 'MaxAttemptsExceeded' },
    ]);
  });
});
