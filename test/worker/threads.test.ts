/**
 * The handler thread's plumbing, from the TypeScript sources (as the test suite runs them): the
 * codec that carries thrown values across the thread boundary, where the pool finds its thread
 * entry (sources or build), and a pool running the fixture handlers for real.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

import { silentLogger } from '../../src/obs/logger.js';
import { RetryAfter, Snooze } from '../../src/retry/control-flow.js';
import {
  deserializeThrown,
  serializeThrown,
  ThreadError,
} from '../../src/worker/threads/thread-error-codec.js';
import { locateThreadEntry, ThreadEntryUnavailable } from '../../src/worker/threads/thread-entry-location.js';
import { ThreadPool, ThreadTerminated } from '../../src/worker/threads/thread-pool.js';
import { CardDeclined } from '../fixtures/thread-handlers.js';
import { waitFor } from '../helpers/wait.js';

/** The hooks a pool run reports to. */
type Hooks = Parameters<ThreadPool['run']>[1];

/** What the worker gets for `thrown`: serialised, cloned as postMessage would, rebuilt. */
const roundTrip = (thrown: unknown): Error => deserializeThrown(structuredClone(serializeThrown(thrown)));

describe('thread error codec', () => {
  it('brings Snooze back as a Snooze with its delay', () => {
    const back = roundTrip(new Snooze('3s'));
    expect(back).toBeInstanceOf(Snooze);
    expect((back as Snooze).delayMs).toBe(3000);
  });

  it('brings RetryAfter back with its delay and budget rule', () => {
    const counted = roundTrip(new RetryAfter(1500));
    expect(counted).toBeInstanceOf(RetryAfter);
    expect(counted).toMatchObject({ delayMs: 1500, consumeBudget: true });
    const free = roundTrip(new RetryAfter(250, { consumeBudget: false }));
    expect(free).toBeInstanceOf(RetryAfter);
    expect(free).toMatchObject({ delayMs: 250, consumeBudget: false });
  });

  it('recognises control flow by its code, whichever copy of the class threw it', () => {
    const foreign = Object.assign(new Error('snoozed elsewhere'), { code: 'TASKQ_SNOOZE', delayMs: 40 });
    expect(roundTrip(foreign)).toBeInstanceOf(Snooze);
  });

  it('keeps an error subclass as a ThreadError with its class name, message, code and stack', () => {
    const original = new CardDeclined('card declined');
    const back = roundTrip(original);
    expect(back).toBeInstanceOf(ThreadError);
    expect(back).toMatchObject({
      name: 'CardDeclined',
      originalClass: 'CardDeclined',
      message: 'card declined',
      code: 'CARD_DECLINED',
    });
    expect(back.stack).toBe(original.stack);
    expect(roundTrip(new TypeError('bad'))).toMatchObject({ originalClass: 'TypeError', code: undefined });
  });

  it('keeps a thrown non-Error value as its type and text', () => {
    expect(roundTrip('a bare string')).toMatchObject({ originalClass: 'string', message: 'a bare string' });
    expect(roundTrip(42)).toMatchObject({ originalClass: 'number', message: '42' });
    expect(roundTrip(Object.create(null))).toMatchObject({
      originalClass: 'object',
      message: '[object Object]',
    });
  });
});

describe('locateThreadEntry', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  /** A directory laid out like the build's `worker/threads/`, with or without the entry. */
  const builtLayout = (withEntry: boolean): URL => {
    const dir = mkdtempSync(join(tmpdir(), 'taskq-thread-entry-'));
    dirs.push(dir);
    const threads = join(dir, 'dist', 'worker', 'threads');
    mkdirSync(threads, { recursive: true });
    writeFileSync(join(threads, 'thread-pool.js'), '');
    if (withEntry) writeFileSync(join(threads, 'thread-entry.js'), '');
    return pathToFileURL(join(threads, 'thread-pool.js'));
  };

  it('starts thread-entry.js beside the compiled pool as is', () => {
    const pool = builtLayout(true);
    const entry = locateThreadEntry(pool, () => 'file:///never/used.mjs');
    expect(entry).toEqual({ url: new URL('./thread-entry.js', pool), loader: undefined });
  });

  it('starts thread-entry.ts beside the source pool through tsx', () => {
    const pool = new URL('../../src/worker/threads/thread-pool.ts', import.meta.url);
    const entry = locateThreadEntry(pool);
    expect(entry.url.href).toBe(new URL('./thread-entry.ts', pool).href);
    expect(entry.loader).toMatch(/^file:.*\/tsx\/.*\.mjs$/);
  });

  it('says why when the entry is missing or the sources cannot be loaded', () => {
    const pool = builtLayout(false);
    expect(() => locateThreadEntry(pool)).toThrow(ThreadEntryUnavailable);
    expect(() => locateThreadEntry(pool)).toThrow(/thread-entry\.js does not exist/);
    const source = new URL('../../src/worker/threads/thread-pool.ts', import.meta.url);
    expect(() => locateThreadEntry(source, () => undefined)).toThrow(/needs tsx to load: install tsx/);
  });
});

describe('ThreadPool', () => {
  const pool = new ThreadPool(silentLogger);
  afterAll(() => pool.close());
  const handlers = new URL('../fixtures/thread-handlers.ts', import.meta.url).href;
  const facts = {
    jobId: 'j1',
    actor: 'a',
    queue: 'q',
    attempt: 2,
    workerId: 'w',
    heartbeatDetails: { offset: 7 },
  };
  const noHooks: Hooks = { onProgress: () => undefined, onHeartbeat: () => undefined };
  const run = (exportName: string, payload: unknown, hooks = noHooks) =>
    pool.run({ module: handlers, exportName, payload, ctx: facts }, hooks);

  it('runs a TypeScript handler in a thread and forwards its progress and heartbeats', async () => {
    const progress: unknown[] = [];
    const beats: unknown[] = [];
    const hooks: Hooks = {
      onProgress: (u) => void progress.push(u),
      onHeartbeat: (d, has) => void beats.push(has ? d : 'none'),
    };
    expect(await run('reporting', { steps: 2 }, hooks).result).toBe(2);
    expect(progress).toEqual([
      { step: 's1', percent: 50 },
      { step: 's2', percent: 100 },
    ]);
    expect(await run('beating', { offset: 9 }, hooks).result).toEqual({ offset: 7 });
    expect(beats).toEqual([{ offset: 9 }, 'none']);
  });

  it('hands the worker control flow and errors as the codec rebuilds them', async () => {
    await expect(run('throwing', { kind: 'snooze' }).result).rejects.toSatisfy(
      (e) => e instanceof Snooze && e.delayMs === 2000,
    );
    await expect(run('throwing', { kind: 'retryAfter' }).result).rejects.toSatisfy(
      (e) => e instanceof RetryAfter && e.delayMs === 1500 && e.consumeBudget,
    );
    await expect(run('throwing', { kind: 'retryAfterFree' }).result).rejects.toSatisfy(
      (e) => e instanceof RetryAfter && e.delayMs === 250 && !e.consumeBudget,
    );
    await expect(run('throwing', { kind: 'declined' }).result).rejects.toMatchObject({
      originalClass: 'CardDeclined',
      code: 'CARD_DECLINED',
    });
    await expect(run('throwing', { kind: 'string' }).result).rejects.toMatchObject({
      originalClass: 'string',
    });
    await expect(run('missing', {}).result).rejects.toMatchObject({
      originalClass: 'TypeError',
      message: expect.stringContaining('has no function export named missing'),
    });
  });

  it('stops a polling handler through shouldAbort(), and a deaf one by terminating its thread', async () => {
    let spinning = false;
    const polite = run(
      'politeSpin',
      { ms: 120_000 },
      { ...noHooks, onProgress: () => void (spinning = true) },
    );
    await waitFor(() => spinning, 10_000, 'the polite spinner to start');
    polite.abort('cancel requested');
    await expect(polite.result).rejects.toMatchObject({ message: 'stopped on request' });
    const deaf = run('spin', { ms: 120_000 });
    deaf.terminate();
    await expect(deaf.result).rejects.toBeInstanceOf(ThreadTerminated);
  });
});
