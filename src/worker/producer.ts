import type { Backend } from '../backend/backend.js';
import type { DispatchRequest } from '../backend/worker-types.js';
import type { Logger } from '../obs/logger.js';
import type { WorkerMetrics } from '../obs/metrics/worker-metrics.js';
import { DispatchTracing } from '../obs/tracing/dispatch-tracing.js';
import type { JobRunner } from './job-runner.js';
import { interruptibleSleep, jitter } from './sleep.js';
import { isTransientError } from '../db/transient-errors.js';

/** What the producer needs to claim work. */
export interface ProducerOptions {
  workerId: string;
  queues: readonly string[];
  actors: readonly { name: string; maxConcurrent: number | null }[];
  maxConcurrency: number;
  /**
   * Jobs claimed beyond free slots (local queue), or `'adaptive'`: about
   * {@link ADAPTIVE_QUEUE_MS} of work at the handlers' recent average duration.
   */
  prefetch: number | 'adaptive';
  /** Stop claiming while this many outcomes wait to be written (the database is behind). */
  maxSettleBacklog: number;
  /** Outcomes waiting to be written. */
  settleBacklog: () => number;
  leaseMs: number;
  oversample: number;
  /** Current poll period: short while NOTIFY is down, long while it works. */
  pollIntervalMs: () => number;
  /**
   * True while every new job is announced to this worker (its NOTIFY listener is connected). Only
   * then does a drained claim stop freed slots from claiming: without wake-ups, those claims are
   * how a busy worker finds new work before the poll.
   */
  wakeUpsReliable: () => boolean;
  /** A `dispatch` span around each claim statement (default true; false: no tracer is called). */
  otelEnabled?: boolean;
  /** Claim latency and claimed jobs are recorded here (`otelEnabled`; none: nothing is recorded). */
  metrics?: WorkerMetrics | null;
}

/** Adaptive prefetch: the local queue holds about this much work (at the recent average duration). */
export const ADAPTIVE_QUEUE_MS = 50;
/**
 * Adaptive prefetch never exceeds this many jobs (it binds only for jobs shorter than
 * `50 ms × maxConcurrency ÷ 1000`). Larger claims mean fewer claim statements and fewer claims
 * contending at the head of the dispatch index, so short jobs cost Postgres less CPU each. A cap this
 * large pays only with outcome writes of as many jobs (`MAX_SETTLE_BATCH`, completer.ts): a claim
 * behind smaller writes waits for several of them while the cores sit idle. The price is memory: the
 * local queue holds up to this many claimed jobs with their payloads (bench/NOTES.md).
 */
export const ADAPTIVE_PREFETCH_MAX = 1000;

/**
 * Most claims in flight at once: one. A second claim beside the first would keep claim time (which
 * grows with the claim's size) from capping the worker, but with claims of up to 1,000 jobs
 * ({@link ADAPTIVE_PREFETCH_MAX}) the overlap costs more than it gives: the second claim walks past
 * every row the first holds locked (`SKIP LOCKED` still visits them) and the two contend at the head
 * of the dispatch index. One claim costs less CPU per job, in the worker and in Postgres, and drains
 * faster except at high concurrency in a single process, where it loses a little; it also holds one
 * Postgres connection fewer (bench/NOTES.md).
 */
export const MAX_CLAIMS_IN_FLIGHT = 1;

/** Longest a denial pauses claims for an actor (`Producer.pauseActor`). */
export const MAX_ACTOR_PAUSE_MS = 5_000;

/**
 * Claims jobs up to the worker's free capacity and hands them to the runner, one claim at a time
 * ({@link MAX_CLAIMS_IN_FLIGHT}). It claims again at once after a full batch, and otherwise sleeps
 * until a NOTIFY wake-up, a freed slot, or the poll period; wake-ups that arrive during a claim
 * coalesce into the next one.
 *
 * Claims are batched: a claim costs a few milliseconds whatever its size, so while handlers still
 * have claimed jobs waiting, the producer waits until half of the local capacity
 * (`maxConcurrency + prefetch`) is free before claiming again. A slot with nothing left to run is
 * filled at once — unless the last claim was drained (it took everything claimable, and no
 * wake-up has come since): then only a wake-up, the poll or the end of a pause starts the next.
 */
export class Producer {
  private stopController = new AbortController();
  private loopPromise: Promise<void> | null = null;
  private woken = false;
  private wakeSleep: (() => void) | null = null;
  private errorStreak = 0;
  /** No claim starts before this `performance.now()` time (backoff after a failed claim). */
  private backoffUntil = 0;
  /** Claims started by the loop and not finished. */
  private readonly inFlight = new Set<Promise<void>>();
  /** Jobs asked for by the claims in flight (capacity they may fill). */
  private reserved = 0;
  /** Wake-ups received so far: one that arrives during a claim may not be in that claim's snapshot. */
  private wakeUps = 0;
  /** Capacity events (a slot or an outcome write freed) so far. */
  private capacityEvents = 0;
  /**
   * True while the database is known to hold nothing this worker could claim: the last claim was
   * {@link DispatchRequest.onDrained drained} and no wake-up has come since it started. Freed
   * slots then start no claim (while wake-ups are reliable); a wake-up, the poll, a backoff's end
   * or an actor's resumption does.
   */
  private drained = false;
  /** Actors not to claim for until the given `performance.now()` time (a limit that denies them all). */
  private readonly pausedUntil = new Map<string, number>();
  /** Most jobs per claim for actors a shared limit denied lately (growing by one per admitted job). */
  private readonly throttle = new Map<string, number>();
  /** Null when tracing is off (decided once: claims then never call a tracer). */
  private readonly tracing: DispatchTracing | null;

  constructor(
    private readonly backend: Backend,
    private readonly runner: JobRunner,
    private readonly options: ProducerOptions,
    private readonly logger: Logger,
  ) {
    this.tracing = options.otelEnabled === false ? null : new DispatchTracing(options.workerId);
  }

  start(): void {
    this.loopPromise ??= this.loop();
  }

  /**
   * Opens and plans the claim (and outcome) connections before the first claim, claiming nothing.
   * Best effort: a failure is logged and the first real claim pays the cost instead.
   */
  async warmUp(): Promise<void> {
    try {
      await this.backend.warmUp?.({
        workerId: this.options.workerId,
        queues: this.options.queues,
        actors: this.options.actors,
        limit: 0,
        leaseMs: this.options.leaseMs,
        oversample: this.options.oversample,
      });
    } catch (err) {
      this.logger.warn({ err }, 'claim-warm-up-failed');
    }
  }

  /**
   * A rate limit or reservation that holds for every job of `actor` (not a keyed one) denied a job
   * and said when to try again: claiming more of its jobs before then would only claim and
   * reschedule them. Capped at {@link MAX_ACTOR_PAUSE_MS}, so a reset limit is noticed soon. After
   * the pause the actor's claims start at one job and grow by one with every job admitted.
   */
  pauseActor(actor: string, forMs: number): void {
    const until = performance.now() + Math.min(Math.max(0, forMs), MAX_ACTOR_PAUSE_MS);
    if ((this.pausedUntil.get(actor) ?? 0) < until) this.pausedUntil.set(actor, until);
    this.throttle.set(actor, 1);
  }

  /** The actors to claim for now, and how long until the next paused one may be claimed again. */
  private claimableActors(): { actors: ProducerOptions['actors']; resumeInMs: number } {
    if (this.pausedUntil.size === 0) return { actors: this.options.actors, resumeInMs: Infinity };
    const now = performance.now();
    let resumeInMs = Infinity;
    for (const [actor, until] of this.pausedUntil) {
      if (until <= now) this.pausedUntil.delete(actor);
      else resumeInMs = Math.min(resumeInMs, until - now);
    }
    return {
      actors: this.options.actors.filter((a) => !this.pausedUntil.has(a.name)),
      resumeInMs,
    };
  }

  /**
   * A job of `actor` got past its limits: a throttled actor may claim one more job per claim (the
   * next actor-wide denial shrinks it to one again); once claims are as large as the worker's
   * whole capacity, the throttle is lifted.
   */
  actorAdmitted(actor: string): void {
    const allowance = this.throttle.get(actor);
    if (allowance === undefined) return;
    if (allowance + 1 >= this.options.maxConcurrency + this.prefetch()) this.throttle.delete(actor);
    else this.throttle.set(actor, allowance + 1);
  }

  /**
   * New work may be available (a NOTIFY on the wake channel): claim without waiting for the poll.
   * A sleeping loop is woken only when it would start a claim now. A wake-up during a claim is
   * counted, so that claim is followed by another when it ends.
   */
  notify(): void {
    this.wakeUps++;
    this.drained = false;
    if (this.wakeSleep !== null && !this.woken && !this.wouldClaimNow()) return;
    this.wakeLoop();
  }

  /**
   * Capacity may have been freed (a handler ended, an outcome was written): claim if that is worth
   * it now. Slots free one job at a time, so a sleeping loop is woken only when it would start a
   * claim: waking it for each (a new sleep, timer and promise per job) cost more than the check.
   * Nothing happens while the database is known to be {@link drained}: under a trickle many such
   * claims came back empty, and a job announced during one waited for it to end before its own claim
   * could start.
   */
  capacityFreed(): void {
    this.capacityEvents++;
    if (this.freedSlotsNeedNoClaim()) return;
    if (this.wakeSleep !== null && !this.woken && !this.wouldClaimNow()) return;
    this.wakeLoop();
  }

  /** True when a freed slot has nothing to claim: the queue is drained and wake-ups announce new work. */
  private freedSlotsNeedNoClaim(): boolean {
    return this.drained && this.options.wakeUpsReliable();
  }

  /** What the loop would decide if it woke now: start a claim (no backoff, enough free capacity). */
  private wouldClaimNow(): boolean {
    if (this.backoffUntil > performance.now()) return false;
    return this.mayStartClaim(this.freeCapacity());
  }

  private wakeLoop(): void {
    this.woken = true;
    this.wakeSleep?.();
  }

  /**
   * One claim: up to the free capacity. Returns how many jobs were claimed (and handed to the
   * runner). Safe to call from tests without starting the loop.
   */
  /** How many jobs the producer may claim now. */
  freeCapacity(): number {
    if (this.options.settleBacklog() >= this.options.maxSettleBacklog) return 0;
    return this.options.maxConcurrency + this.prefetch() - this.runner.held - this.reserved;
  }

  /**
   * Jobs to hold beyond the running ones. Adaptive: short jobs get a deep local queue (claims are
   * few and large, the way to go fast), long ones almost none (a worker must not sit on jobs an idle
   * worker could start); `maxConcurrency` until a duration has been observed.
   */
  prefetch(): number {
    const p = this.options.prefetch;
    if (p !== 'adaptive') return p;
    const c = this.options.maxConcurrency;
    const avg = this.runner.averageHandlerMs;
    if (avg === null) return c;
    const wanted = Math.round((ADAPTIVE_QUEUE_MS * c) / Math.max(avg, 0.01));
    return Math.min(wanted, ADAPTIVE_PREFETCH_MAX);
  }

  /** Smallest claim worth a round trip while the local queue still feeds every slot. */
  private minBatch(): number {
    return Math.max(1, Math.floor((this.options.maxConcurrency + this.prefetch()) / 2));
  }

  /** True when a claim is worth making now: enough room, or a slot would otherwise sit idle. */
  private worthClaiming(free: number): boolean {
    if (free <= 0) return false;
    if (free >= this.minBatch()) return true;
    return this.runner.buffered === 0 && this.runner.running < this.options.maxConcurrency;
  }

  async runOnce(): Promise<number> {
    const free = this.freeCapacity();
    if (!this.worthClaiming(free)) return 0;
    return (await this.claimUpTo(free)).claimed;
  }

  /**
   * One round of claims for at most `free` jobs (throttled actors first, each on its own). The
   * round is drained when it claimed for every actor and each of its claims was drained.
   */
  private async claimUpTo(free: number): Promise<{ claimed: number; drained: boolean }> {
    const { actors } = this.claimableActors();
    if (actors.length === 0) return { claimed: 0, drained: false };
    let drained = actors.length === this.options.actors.length;
    // Throttled actors (a shared limit denied them lately) are claimed on their own, a few jobs at
    // a time: a full batch would mostly be claimed only to be denied and rescheduled.
    let left = free;
    let claimed = 0;
    for (const a of actors) {
      const allowance = this.throttle.get(a.name);
      if (allowance === undefined) continue;
      if (left <= 0) {
        drained = false;
        continue;
      }
      const limit = Math.min(left, allowance);
      const c = await this.claim([a], limit);
      claimed += c.claimed;
      left -= c.claimed;
      drained &&= c.drained;
    }
    const open = actors.filter((a) => !this.throttle.has(a.name));
    if (open.length > 0) {
      if (left > 0) {
        const c = await this.claim(open, left);
        claimed += c.claimed;
        drained &&= c.drained;
      } else drained = false;
    }
    return { claimed, drained };
  }

  /** One dispatch statement; hands the rows to the runner (or gives them back when stopping). */
  private async claim(
    actors: ProducerOptions['actors'],
    limit: number,
  ): Promise<{ claimed: number; drained: boolean }> {
    let drained = false;
    // Jobs that will go straight to a free slot (or be recorded ahead) are recorded as started by the
    // claim itself; the others wait in the local queue unrecorded, so that a crash before they start
    // costs them no attempt.
    const startNow = Math.min(limit, this.runner.startsRecordedByClaim());
    const request: DispatchRequest = {
      workerId: this.options.workerId,
      queues: this.options.queues,
      actors,
      limit,
      leaseMs: this.options.leaseMs,
      oversample: this.options.oversample,
      startNow,
      onDrained: () => {
        drained = true;
      },
    };
    const metrics = this.options.metrics ?? null;
    const t0 = metrics === null ? 0 : performance.now();
    const rows =
      this.tracing === null
        ? await this.backend.dispatchBatch(request)
        : await this.tracing.dispatch(limit, () => this.backend.dispatchBatch(request));
    metrics?.dispatched((performance.now() - t0) / 1000, rows.length);
    if (this.stopController.signal.aborted && rows.length > 0) {
      // Claimed while shutting down: these never start; give them straight back.
      await this.backend.repend(
        this.options.workerId,
        rows.map((r) => r.id),
      );
      return { claimed: 0, drained: false };
    }
    for (let i = 0; i < rows.length; i++) this.runner.accept(rows[i]!, i < startNow);
    return { claimed: rows.length, drained };
  }

  /** True when a claim may start now (see {@link MAX_CLAIMS_IN_FLIGHT}). */
  private mayStartClaim(free: number): boolean {
    return this.inFlight.size < MAX_CLAIMS_IN_FLIGHT && this.worthClaiming(free);
  }

  /**
   * Starts a claim for the free capacity without waiting for it. When it ends, the loop is woken if
   * the claim was full (there may be more), if it failed (the backoff), if a wake-up arrived while
   * it ran (a job enqueued meanwhile may not be in its snapshot), or if capacity was freed while it
   * ran and the claim was not drained (a freed slot may let a held-back job through).
   */
  private startClaim(free: number): void {
    this.reserved += free;
    this.drained = false;
    const wakeUpsAtStart = this.wakeUps;
    const capacityAtStart = this.capacityEvents;
    const claim: Promise<void> = this.claimUpTo(free)
      .then(
        ({ claimed, drained }) => {
          this.errorStreak = 0;
          const newWork = this.wakeUps !== wakeUpsAtStart;
          this.drained = drained && !newWork;
          return (
            (claimed > 0 && claimed === free) ||
            newWork ||
            (!this.freedSlotsNeedNoClaim() && this.capacityEvents !== capacityAtStart)
          );
        },
        (err: unknown) => {
          this.errorStreak++;
          this.logger.warn(
            { err, transient: isTransientError(err), streak: this.errorStreak },
            'dispatch-failed',
          );
          this.backoffUntil =
            performance.now() + Math.min(this.options.pollIntervalMs() * this.errorStreak, 10_000);
          return true;
        },
      )
      .then((again) => {
        this.reserved -= free;
        this.inFlight.delete(claim);
        if (again) this.wakeLoop();
      });
    this.inFlight.add(claim);
  }

  private async loop(): Promise<void> {
    const signal = this.stopController.signal;
    while (!signal.aborted) {
      this.woken = false;
      const backoffMs = this.backoffUntil - performance.now();
      const free = backoffMs > 0 ? 0 : this.freeCapacity();
      if (backoffMs <= 0 && this.mayStartClaim(free)) {
        this.startClaim(free);
        continue;
      }
      // Nothing to start: sleep until a wake-up (new jobs, a freed slot, a full or failed claim),
      // the end of a backoff or of an actor's pause, or the poll period.
      const resumeInMs = this.claimableActors().resumeInMs;
      // No abort listener: `stop()` aborts and then wakes this sleep itself (the check of `signal`
      // above and the assignment below run in one turn, so a stop cannot fall between them).
      const sleep = interruptibleSleep(
        Math.min(backoffMs > 0 ? backoffMs : jitter(this.options.pollIntervalMs()), resumeInMs + 1),
      );
      this.wakeSleep = sleep.wake;
      if (this.woken) sleep.wake();
      await sleep.promise;
      this.wakeSleep = null;
      // Not woken: the poll period, a backoff or an actor's pause ended. Look again whatever the
      // last claim saw (a wake-up may have been lost).
      if (!this.woken) this.drained = false;
    }
    await Promise.all([...this.inFlight]);
  }

  /** Stops claiming and waits for the claims in flight to finish (their rows are given back). */
  async stop(): Promise<void> {
    this.stopController.abort();
    this.wakeSleep?.();
    await this.loopPromise;
  }
}
