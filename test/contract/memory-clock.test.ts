/**
 * The in-memory backend keeps time only by its injected clock (docs/testing.md): every path runs
 * here under a FakeClock while the system clock is watched, and a single read of `Date.now()`,
 * `new Date()` or `performance.now()` from the backend fails the test with the place it came from.
 */
import { afterEach, describe, expect, it } from 'vitest';

import { InMemoryBackend } from '../../src/backend/memory/in-memory-backend.js';
import { normalizeJobFilter } from '../../src/backend/job-filter.js';
import type { EnqueueArgs } from '../../src/backend/types.js';
import type { Settlement } from '../../src/backend/worker-types.js';
import type { ActorRef } from '../../src/core/actor.js';
import { buildEnqueueArgs } from '../../src/client/enqueue-options.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { nextScheduleSlot } from '../../src/cron/schedule-slot.js';
import { silentLogger } from '../../src/obs/logger.js';
import { plain } from '../helpers/actors.js';

const W1 = '018f0000-0000-7000-8000-00000000aaa1';
const ACTORS = [{ name: 'plain', maxConcurrent: null }];

/** Records every read of the system clock (with its stack) until `stop()`. */
function watchSystemClock(): { reads: string[]; stop(): void } {
  const reads: string[] = [];
  const RealDate = Date;
  const realNow = Date.now.bind(Date);
  const realPerfNow = performance.now.bind(performance);
  const record = (what: string): void => {
    reads.push(`${what}\n${new Error().stack?.split('\n').slice(2, 7).join('\n') ?? ''}`);
  };
  class WatchedDate extends RealDate {
    constructor(...args: ConstructorParameters<DateConstructor> | []) {
      if (args.length === 0) record('new Date()');
      super(...(args as [number]));
    }
    static override now(): number {
      record('Date.now()');
      return realNow();
    }
  }
  globalThis.Date = WatchedDate as DateConstructor;
  performance.now = () => {
    record('performance.now()');
    return realPerfNow();
  };
  return {
    reads,
    stop() {
      globalThis.Date = RealDate;
      performance.now = realPerfNow;
    },
  };
}

/** Enqueue arguments (made before the watch: job ids carry the creation time, by design). */
function args(n: number, options: Parameters<typeof buildEnqueueArgs>[2] = {}): EnqueueArgs {
  return buildEnqueueArgs(plain as unknown as ActorRef<unknown, unknown>, JSON.stringify({ n }), options, {
    maxPending: null,
    idempotencyMaxBytes: 1024,
  });
}

describe('InMemoryBackend under a FakeClock', () => {
  let watch: ReturnType<typeof watchSystemClock> | null = null;
  afterEach(() => {
    watch?.stop();
    watch = null;
  });

  it('reads no system clock on any path', async () => {
    const clock = new FakeClock(Date.UTC(2030, 0, 1));
    const backend = new InMemoryBackend({ clock });
    const a = Array.from({ length: 12 }, (_, i) => args(i));
    const keyed = args(100, { idempotencyKey: 'k1' });
    const unique = args(101, { identityKey: 'id-1' });
    const later = args(102, { delay: '1m' });
    const deadline = { ...args(103), scheduleToCloseIntervalMs: 30_000 };
    const singleton = { ...args(104), actor: 'solo', singleton: true, scheduleToCloseIntervalMs: 60_000 };
    const capped = { ...args(105), maxPending: 1 };
    const batch = [args(200), args(201, { idempotencyKey: 'k2' })];
    const fast = [args(300), args(301)];
    const txArgs = args(106);
    const spare = [args(0).id, args(0).id, args(0).id, args(0).id];
    // Schedules, their ids and a fired slot's job made before the watch (ids carry the time).
    const sched = (name: string) => ({
      id: args(0).id,
      actor: 'plain',
      name,
      cronExpr: '*/5 * * * *',
      timezone: 'Europe/Berlin',
      dstStrategy: 'allof' as const,
      payloadFactory: null,
      staticPayloadJson: '{"n":1}',
      identityKey: null,
      enabled: true,
    });
    const cronA = sched('a');
    const cronB = sched('b');
    const firedJob = args(400);

    watch = watchSystemClock();
    const seen: string[] = [];
    const sub = await backend.subscribe(
      {
        onWake: () => seen.push('wake'),
        onDone: () => seen.push('done'),
        onProgress: () => seen.push('progress'),
        onCancel: () => seen.push('cancel'),
      },
      { workerId: W1 },
    );

    // Enqueue paths and their gates.
    for (const x of a) await backend.enqueue(x);
    await backend.enqueue(keyed);
    await backend.enqueue({ ...keyed, id: spare[0]! });
    await backend.enqueue(unique);
    await backend.enqueue({ ...unique, id: spare[1]!, uniqueForMs: 60_000 });
    await backend.enqueue(later);
    await backend.enqueue(deadline);
    await backend.enqueue(singleton);
    await expect(backend.enqueue({ ...singleton, id: spare[2]! })).rejects.toThrow();
    await expect(backend.enqueue(capped)).rejects.toThrow();
    const tx = backend.beginTransaction();
    await backend.enqueueWithConn(tx, txArgs);
    await tx.commit();
    await backend.enqueueBatch(batch);
    await backend.enqueueBatchFast(fast);

    // Reads.
    const first = (await backend.get(a[0]!.id))!;
    await backend.listJobs(normalizeJobFilter({}));
    await backend.countPendingJobs(['plain']);
    await backend.countActiveJobs(['default']);
    await backend.getActorMaxPending();

    // Operator configuration.
    await backend.syncActorConfig([{ actor: 'plain', queue: first.queue, metadata: {} }], { force: false });
    await backend.getActorConfigs();
    await backend.setActorCapacity('plain', { maxPending: 1000, resultTtlMs: 60_000 });
    await backend.setQueueMode(first.queue, 'round_robin');
    await backend.setQueueMaxConcurrent(first.queue, 3);
    await backend.listQueues();
    await backend.verifySchema();

    // Worker side.
    await backend.registerWorker({
      workerId: W1,
      hostname: 'h',
      pid: 1,
      label: null,
      queues: [first.queue],
      maxConcurrency: 10,
      version: 'test',
    });
    await backend.touchWorker(W1);
    // The fleet snapshot, over jobs, workers, a held keyed slot and (below) the leader lease.
    const stores = backend.rateLimitStores({ pgFallback: true, logger: silentLogger });
    const slot = { name: 'api:k1', slots: 2, keyed: true, leaseMs: 30_000 };
    await stores.shared.acquireSlot(slot, a[0]!.id, W1);
    await backend.observeFleet({ aliveWithinMs: 60_000, keyedReservationBases: ['api'] });
    const claimed = await backend.dispatchBatch({
      workerId: W1,
      queues: [first.queue],
      actors: ACTORS,
      limit: 10,
      leaseMs: 30_000,
      oversample: 2,
    });
    expect(claimed.length).toBeGreaterThanOrEqual(6);
    const ids = claimed.map((c) => c.id);
    await backend.heartbeatJobs(W1, ids, 30_000, new Map([[ids[0]!, '{"at":1}']]));
    await backend.flushProgress(W1, [{ jobId: ids[0]!, seq: 1, state: { percent: 10 } }]);
    await backend.writeCancelRequest(ids[1]!, 'stop');
    await backend.pollCancelFlags(W1);
    await backend.writeCancelEscalation(ids[1]!, W1);
    await backend.markAbandoned(ids[1]!, W1, { seq: 2, state: {} });
    const base = { workerId: W1, handlerStartedAt: clock.now(), durationMs: 5 };
    const outcomes: Settlement[] = [
      {
        ...base,
        jobId: ids[0]!,
        kind: 'succeeded',
        resultJson: '1',
        resultSizeBytes: 1,
        fallbackResultTtlMs: 1000,
      },
      {
        ...base,
        jobId: ids[2]!,
        kind: 'failed',
        error: { errorClass: 'E', message: 'm', traceback: null },
        retryDelayMs: 1000,
      },
      {
        ...base,
        jobId: ids[3]!,
        kind: 'reschedule',
        delayMs: 500,
        consumeBudget: false,
        outcome: 'snoozed',
        error: null,
      },
      { ...base, jobId: ids[4]!, kind: 'cancelled', error: null },
      { ...base, jobId: ids[5]!, kind: 'release', error: null },
    ];
    await backend.settle(outcomes);
    await backend.repend(W1, ids.slice(6));
    await backend.writeAttempt({
      jobId: ids[0]!,
      attempt: 1,
      workerId: W1,
      startedAt: clock.now(),
      finishedAt: clock.now(),
      durationMs: 1,
      outcome: 'succeeded',
      errorClass: null,
      errorMessage: null,
      errorTraceback: null,
    });
    await backend.getAttempts(ids[0]!);
    await backend.getEvents(ids[0]!);
    await backend.retryJob(ids[4]!);
    await backend.cancelWhere(normalizeJobFilter({ actor: 'plain' }), 'all');

    // Maintenance, after time passes on the fake clock only.
    const leader = await backend.openLeaderSession(W1, 'host', { leaseMs: 60_000 });
    await leader.tryAcquire();
    clock.advance('2h');
    // The lease expired on the fake clock: the sweeps of the old term are refused, a new term runs them.
    await expect(backend.deadlineSweep(10, leader.fence!)).rejects.toThrow(/no longer holds/);
    await leader.tryAcquire();
    const fence = leader.fence!;
    await backend.getLeaderLease();
    await backend.scheduledToPending(10_000, fence);
    await backend.reclaimExpiredLocks(1000, 1000, 1000, fence);
    await backend.deadlineSweep(1000, fence);
    await backend.sweepExpiredResults(1000, fence);
    await backend.cleanupStaleWorkers(60_000, fence);
    await backend.strandedActors();
    expect((await backend.observeFleet({ aliveWithinMs: 60_000, keyedReservationBases: [] })).leaders).toBe(
      1,
    );
    clock.advance('30d');
    await leader.tryAcquire();
    await backend.pruneJobs(
      { succeededMs: 1000, failedMs: 1000, cancelledMs: 1000, abandonedMs: 1000, archiveMs: 1000 },
      100,
      leader.fence!,
    );
    clock.advance('1d');
    await leader.tryAcquire();
    await backend.expireArchive(100, leader.fence!);
    await backend.pollReclaimEvents('0', { visibilityDelayMs: 0 });

    // Cron schedules: every member, on the fake clock only.
    await backend.createSchedule(cronA, nextScheduleSlot);
    await backend.ensureSchedules([cronA, cronB], nextScheduleSlot);
    await backend.getSchedule(cronA.id);
    await backend.listSchedules({ actor: 'plain', enabled: true });
    await backend.updateSchedule(
      cronA.id,
      { cronExpr: '0 * * * *', staticPayloadJson: null },
      nextScheduleSlot,
    );
    await backend.updateSchedule(cronA.id, { fireNow: true, enabled: true }, nextScheduleSlot);
    const due = await backend.dueSchedules(10);
    const at = due.rows[0]!.nextFireAt!;
    await backend.fireSchedules(
      [
        {
          scheduleId: cronA.id,
          expectedNextFireAt: at,
          fires: [{ fireAt: at, job: firedJob }],
          nextFireAt: null,
          failure: null,
        },
      ],
      { autoDisableThreshold: 3 },
      leader.fence!,
    );
    await backend.listScheduleFires(cronA.id, 10);
    await backend.deleteSchedule(cronA.id);
    await leader.close();
    await stores.close();
    await backend.deregisterWorker(W1);
    await sub.close();
    await backend.close();

    watch.stop();
    expect(watch.reads).toEqual([]);
    expect(seen).toContain('done');
  });

  it('reads no system clock on the batch paths', async () => {
    const clock = new FakeClock(Date.UTC(2030, 0, 1));
    const backend = new InMemoryBackend({ clock });
    const [aborting, open, rowless] = [args(0).id, args(0).id, args(0).id];
    const kids = [args(500), args(501), args(502)];
    const finalizer = args(510);
    const later = args(511);
    const loose = args(512, { metadata: {} });
    loose.metadata.batch_id = rowless;
    const create = { queue: kids[0]!.queue, failureThreshold: 1, finalizer: null };

    watch = watchSystemClock();
    await backend.writeBatch({
      batchId: aborting,
      create: { ...create, finalizer },
      children: kids,
      seal: true,
    });
    await backend.writeBatch({ batchId: open, create, children: [], seal: false });
    const tx = backend.beginTransaction();
    await backend.writeBatch({ batchId: open, children: [later], seal: true }, { connection: tx });
    await tx.commit();
    await backend.enqueue(loose);
    const [claimed] = await backend.dispatchBatch({
      workerId: W1,
      queues: [kids[0]!.queue],
      actors: ACTORS,
      limit: 1,
      leaseMs: 30_000,
      oversample: 2,
    });
    await backend.settle([
      {
        workerId: W1,
        handlerStartedAt: clock.now(),
        durationMs: 1,
        jobId: claimed!.id,
        kind: 'failed',
        error: { errorClass: 'E', message: 'm', traceback: null },
        retryDelayMs: null,
      },
    ]);
    expect((await backend.getBatch(aborting))?.status).toBe('aborted');
    await backend.retryJob(claimed!.id);
    await backend.cancelWhere(normalizeJobFilter({ actor: 'plain' }, 'cancelWhere'), 'all');
    await backend.batchCounts(aborting);
    await backend.batchCounts(rowless, loose.id);
    const page = await backend.listBatches({
      queue: null,
      active: null,
      batchId: null,
      limit: 1,
      cursor: null,
    });
    await backend.listBatches({
      queue: null,
      active: false,
      batchId: null,
      limit: 1,
      cursor: page.nextCursor,
    });
    const leader = await backend.openLeaderSession(W1, 'host', { leaseMs: 60_000 });
    await leader.tryAcquire();
    await backend.completeStaleBatches(100, leader.fence!);
    clock.advance('30d');
    await leader.tryAcquire();
    const retention = {
      succeededMs: 1000,
      failedMs: 1000,
      cancelledMs: 1000,
      abandonedMs: 1000,
      archiveMs: 1000,
    };
    await backend.pruneJobs(retention, 100, leader.fence!);
    expect(await backend.pruneBatches(1000, 100, leader.fence!)).toBe(2);
    await leader.close();
    await backend.close();

    watch.stop();
    expect(watch.reads).toEqual([]);
  });
});
