/**
 * The credential reload coordinator: passes coalesce, each resource is bounded by
 * `reloadFactoryTimeout` (a hung or failing one is reported and the rest still reload), errors are
 * redacted, and the `reloadInterval` timer requests passes without waiting on them.
 */
import { describe, expect, it } from 'vitest';

import { CredentialReloader } from '../../src/credentials/credential-reloader.js';
import type { ReloadableResource } from '../../src/credentials/reloadable-resource.js';
import { ReloadTimer } from '../../src/credentials/reload-timer.js';
import { createLogger } from '../../src/obs/logger.js';
import { flushPromises, waitFor } from '../helpers/wait.js';

const logger = createLogger({ level: 'silent' });

/** A resource whose reloads wait until the test releases them. */
function gatedResource(name: string): ReloadableResource & { calls: number; release(): void } {
  let open: (() => void) | null = null;
  const r = {
    name,
    calls: 0,
    release() {
      open?.();
      open = null;
    },
    reload(): Promise<void> {
      r.calls++;
      return new Promise<void>((resolve) => {
        open = resolve;
      });
    },
  };
  return r;
}

describe('CredentialReloader', () => {
  it('coalesces the requests made during a pass into one more pass', async () => {
    const res = gatedResource('pg:a');
    const reloader = new CredentialReloader({ resources: () => [res], timeoutMs: 10_000, logger });
    const first = reloader.request('signal');
    await flushPromises();
    const second = reloader.request('signal');
    const third = reloader.request('api');
    expect(second).toBe(third);
    expect(res.calls).toBe(1);
    res.release();
    expect((await first).map((o) => o.ok)).toEqual([true]);
    await waitFor(() => res.calls === 2, 5000, 'the coalesced pass');
    res.release();
    expect((await second).map((o) => o.ok)).toEqual([true]);
    expect(res.calls).toBe(2);
    expect(reloader.reloads).toBe(2);
    // Idle again: a new request starts a pass at once.
    const fourth = reloader.request('interval');
    await waitFor(() => res.calls === 3, 5000, 'a fresh pass');
    res.release();
    await fourth;
    expect(reloader.reloads).toBe(3);
  });

  it('reports a hung resource after the timeout, aborts its signal, and still reloads the others', async () => {
    let seen: AbortSignal | null = null;
    const hung: ReloadableResource = {
      name: 'redis:progress',
      reload: (signal) => {
        seen = signal;
        return new Promise<void>(() => undefined);
      },
    };
    let okCalls = 0;
    const fine: ReloadableResource = {
      name: 'pg:taskq-worker',
      reload: () => {
        okCalls++;
        return Promise.resolve();
      },
    };
    const reloader = new CredentialReloader({ resources: () => [hung, fine], timeoutMs: 50, logger });
    const out = await reloader.request('api');
    expect(out.map((o) => [o.resource, o.ok, o.timedOut])).toEqual([
      ['redis:progress', false, true],
      ['pg:taskq-worker', true, false],
    ]);
    expect(out[0]!.error).toMatch(/reloadFactoryTimeout \(50 ms\)/);
    expect(seen!.aborted).toBe(true);
    expect(okCalls).toBe(1);
  });

  it('reports a failing resource with its error, passwords hidden', async () => {
    const failing: ReloadableResource = {
      name: 'pg:taskq-claim',
      reload: () => Promise.reject(new Error('cannot reach postgres://app:hunter2@db:5432/app')),
    };
    const reloader = new CredentialReloader({ resources: () => [failing], timeoutMs: 1000, logger });
    const [out] = await reloader.request('api');
    expect(out).toMatchObject({ resource: 'pg:taskq-claim', ok: false, timedOut: false });
    expect(out!.error).toContain('postgres://app:***@db:5432/app');
    expect(out!.error).not.toContain('hunter2');
  });

  it('reads the resource list at each pass', async () => {
    const list: ReloadableResource[] = [];
    const reloader = new CredentialReloader({ resources: () => list, timeoutMs: 1000, logger });
    expect(await reloader.request('api')).toEqual([]);
    list.push({ name: 'late', reload: () => Promise.resolve() });
    expect((await reloader.request('api')).map((o) => o.resource)).toEqual(['late']);
  });
});

describe('ReloadTimer', () => {
  it('requests a pass every everyMs after the first interval, and stops without waiting on one', async () => {
    const res = gatedResource('pg:a');
    const reloader = new CredentialReloader({ resources: () => [res], timeoutMs: 60_000, logger });
    const timer = new ReloadTimer(reloader, { everyMs: 20 }, logger);
    timer.start();
    // The first loop pass is skipped: nothing reloads at start.
    await flushPromises();
    expect(res.calls).toBe(0);
    await waitFor(() => res.calls === 1, 5000, 'the first interval reload');
    // The pass hangs on the gate; the timer keeps requesting (coalesced) and stops at once.
    await timer.stop();
    res.release();
    await waitFor(() => reloader.reloads >= 1, 5000, 'the pass to end');
  });
});
