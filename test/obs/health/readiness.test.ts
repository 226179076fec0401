import { describe, expect, it } from 'vitest';

import { InvalidArgumentError } from '../../../src/errors/index.js';
import { ReadinessChecks } from '../../../src/obs/health/readiness-checks.js';
import { ReadinessProbe } from '../../../src/obs/health/readiness-probe.js';
import { flushPromises } from '../../helpers/wait.js';

function probeWith(
  checks: ReadinessChecks,
  options: { ping?: () => Promise<void>; phase?: () => string; checkTimeoutMs?: number } = {},
): ReadinessProbe {
  return new ReadinessProbe({
    phase: options.phase ?? (() => 'running'),
    ping: options.ping ?? (() => Promise.resolve()),
    pingTimeoutMs: 200,
    checks,
    checkTimeoutMs: options.checkTimeoutMs ?? 5000,
  });
}

describe('ReadinessChecks.registerReadinessCheck', () => {
  it('rejects malformed, reserved and duplicate names and non-functions', () => {
    const checks = new ReadinessChecks();
    const ok = (): boolean => true;
    expect(() => checks.registerReadinessCheck('', ok)).toThrow(InvalidArgumentError);
    expect(() => checks.registerReadinessCheck('has space', ok)).toThrow(/registerReadinessCheck\.name/);
    expect(() => checks.registerReadinessCheck('x'.repeat(65), ok)).toThrow(InvalidArgumentError);
    expect(() => checks.registerReadinessCheck('postgres', ok)).toThrow(/built-in Postgres check/);
    checks.registerReadinessCheck('cache', ok);
    expect(() => checks.registerReadinessCheck('cache', ok)).toThrow(/already registered/);
    expect(() => checks.registerReadinessCheck('other', 'nope' as never)).toThrow(/must be a function/);
    expect(checks.names()).toEqual(['cache']);
  });

  it('returns a function that unregisters the check (and only that one)', () => {
    const checks = new ReadinessChecks();
    const off = checks.registerReadinessCheck('a', () => true);
    off();
    const again = checks.registerReadinessCheck('a', () => true);
    off(); // the old handle does not remove the new registration
    expect(checks.names()).toEqual(['a']);
    again();
    expect(checks.names()).toEqual([]);
  });
});

describe('ReadinessProbe', () => {
  it('is ready when running, the ping answers and every check passes', async () => {
    const checks = new ReadinessChecks();
    checks.registerReadinessCheck('sync', () => undefined);
    checks.registerReadinessCheck('async', async () => 'anything but false');
    const report = await probeWith(checks).evaluate();
    expect(report).toMatchObject({
      status: 'ready',
      phase: 'running',
      checks: { postgres: { ok: true }, sync: { ok: true }, async: { ok: true } },
    });
  });

  it('names each failing check and why', async () => {
    const checks = new ReadinessChecks();
    checks.registerReadinessCheck('false', () => false);
    checks.registerReadinessCheck('throws', () => {
      throw new TypeError('cache gone');
    });
    checks.registerReadinessCheck('rejects', () =>
      Promise.reject(new Error('postgres://app:hunter2@db:5432/x refused')),
    );
    const report = await probeWith(checks, {
      ping: () => Promise.reject(new Error('ECONNREFUSED')),
    }).evaluate();
    expect(report.status).toBe('not-ready');
    expect(report.checks).toMatchObject({
      postgres: { ok: false, error: 'Error: ECONNREFUSED' },
      false: { ok: false, error: 'returned false' },
      throws: { ok: false, error: 'TypeError: cache gone' },
      rejects: { ok: false },
    });
    expect(report.checks.rejects!.error).not.toContain('hunter2');
  });

  it('bounds a hanging check by its timeout, aborts its signal, and never runs it twice at once', async () => {
    const checks = new ReadinessChecks();
    let calls = 0;
    let aborted = false;
    let release!: () => void;
    let hang = true;
    checks.registerReadinessCheck('hangs', (signal) => {
      calls++;
      signal.addEventListener('abort', () => (aborted = true));
      return hang ? new Promise<void>((r) => (release = r)) : undefined;
    });
    const probe = probeWith(checks, { checkTimeoutMs: 100 });
    const first = await probe.evaluate();
    expect(first.status).toBe('not-ready');
    expect(first.checks.hangs).toMatchObject({ ok: false, error: 'timed out after 100ms' });
    expect(first.checks.postgres).toMatchObject({ ok: true });
    expect(aborted).toBe(true);
    console.log(`a hanging check answered after ${first.checks.hangs!.durationMs} ms (timeout 100 ms)`);
    // The next probe joins the run still out instead of starting another.
    const second = await probe.evaluate();
    expect(second.checks.hangs).toMatchObject({ ok: false });
    expect(calls).toBe(1);
    // Once it settles, the next probe runs it afresh.
    hang = false;
    release();
    await flushPromises();
    expect((await probe.evaluate()).status).toBe('ready');
    expect(calls).toBe(2);
  });

  it('bounds the Postgres ping by its own timeout', async () => {
    const report = await probeWith(new ReadinessChecks(), {
      ping: () => new Promise(() => undefined),
    }).evaluate();
    expect(report).toMatchObject({
      status: 'not-ready',
      checks: { postgres: { ok: false, error: 'timed out after 200ms' } },
    });
  });

  it('is not ready outside the running phase, without running any check', async () => {
    const checks = new ReadinessChecks();
    let calls = 0;
    checks.registerReadinessCheck('counted', () => void calls++);
    let pings = 0;
    for (const phase of ['starting', 'draining', 'cancelling', 'forcing', 'abandoning', 'stopped']) {
      const report = await probeWith(checks, {
        phase: () => phase,
        ping: async () => void pings++,
      }).evaluate();
      expect(report).toEqual({ status: 'not-ready', phase, checks: {} });
    }
    expect(calls + pings).toBe(0);
  });

  it('reports the shutdown phase that began while the checks ran', async () => {
    let phase = 'running';
    const report = await probeWith(new ReadinessChecks(), {
      phase: () => phase,
      ping: async () => {
        phase = 'draining';
      },
    }).evaluate();
    expect(report).toMatchObject({ status: 'not-ready', phase: 'draining' });
  });
});
