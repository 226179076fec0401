import type { Backend } from '../../backend/backend.js';
import type { ScheduleFireDecision, ScheduleRecord } from '../../backend/schedule-types.js';
import type { EnqueueArgs } from '../../backend/types.js';
import { buildEnqueueArgs } from '../../client/enqueue-options.js';
import { payloadJson } from '../../client/payload-json.js';
import type { AnyActor } from '../../core/actor.js';
import type { PayloadFactory } from '../../cron/cron-declaration.js';
import type { CronSpec } from '../../cron/cron-spec.js';
import { fireTimesAfter } from '../../cron/next-fires.js';
import type { Logger } from '../../obs/logger.js';
import { LoopService } from '../loop-service.js';
import type { LeaderElector } from './leader-elector.js';

/** Due schedules read and written per batch (one fenced transaction each). */
export const CRON_FIRE_BATCH = 500;
/** Slots one schedule fires per batch at most; a longer catch-up goes on in the next batch. */
export const CRON_SLOTS_PER_DECISION = 100;
/** Batches per tick at most, so that one tick stays bounded; the rest waits a second. */
const MAX_BATCHES_PER_TICK = 40;
/** Longest a payload factory may take for one slot. */
const PAYLOAD_FACTORY_TIMEOUT_MS = 5000;
/**
 * A slot this close behind the database clock is on time, not missed: the loop ticks every second
 * and a tick takes its time, so with a catch-up window shorter than this (0 included) a due slot
 * would always look missed and never fire. The window counts from this grace's end.
 */
export const CRON_ON_TIME_GRACE_MS = 5000;

/** What the cron loop needs besides the backend and the election. */
export interface CronFirerOptions {
  /** The actors this worker runs: a schedule of another actor fails its slots. */
  actors: ReadonlyMap<string, AnyActor>;
  /** Payload factories by registered name. */
  factories: ReadonlyMap<string, PayloadFactory>;
  /** `cronCatchUpWindow`: missed slots older than this are skipped. */
  catchUpWindowMs: number;
  /** `cronAutoDisableThreshold`: consecutive failed slots that disable a schedule. */
  autoDisableThreshold: number;
  /** `payloadMaxBytes`: a fired job's payload is bounded as the worker's own enqueues are. */
  payloadMaxBytes: number;
  /** `idempotencyKeyMaxBytes`: the bound of a fired job's idempotency key. */
  idempotencyMaxBytes: number;
}

/** What one tick did (tests, metrics). */
export interface CronTickReport {
  fired: number;
  failed: number;
  stale: number;
  disabled: number;
}

/**
 * Leader only, every second: fires the slots of due schedules. For each batch of due schedules
 * (database clock) it decides in memory what each fires — the slots from the stored next slot up
 * to now, those older than `cronCatchUpWindow` skipped, each slot's job built as an enqueue of the
 * actor would build it — and hands the decisions to `Backend.fireSchedules`, which writes the jobs,
 * the fired slots and every schedule's next slot in one transaction behind the leader's fence, and
 * only where the schedule is still at the slot the decision was made for. A leader that lost its
 * term writes nothing; a crash before the commit writes nothing; the next leader decides again
 * from the same stored slot: no slot is fired twice or skipped (docs/cron.md).
 */
export class CronFirer extends LoopService {
  constructor(
    private readonly backend: Backend,
    private readonly elector: LeaderElector,
    private readonly options: CronFirerOptions,
    logger: Logger,
  ) {
    super('cron', logger);
  }

  protected intervalMs(): number {
    return 1000;
  }

  async runOnce(): Promise<CronTickReport> {
    const report: CronTickReport = { fired: 0, failed: 0, stale: 0, disabled: 0 };
    await this.elector.fenced(async (fence) => {
      for (let batch = 0; batch < MAX_BATCHES_PER_TICK; batch++) {
        const due = await this.backend.dueSchedules(CRON_FIRE_BATCH);
        if (due.rows.length === 0) return;
        // The operators' stored maxPending overrides, read once per batch: a fired job is gated as
        // enqueue() gates it (stored value, else the actor's literal).
        const limits = await this.backend.getActorMaxPending();
        // Many schedules share an expression and a slot (every hour on the hour, say): each next
        // slot is computed once per batch (per batch, so that what is remembered stays small).
        const slots = new SlotMemo();
        const decisions = await Promise.all(due.rows.map((s) => this.decide(s, due.now, slots, limits)));
        const results = await this.backend.fireSchedules(
          decisions,
          { autoDisableThreshold: this.options.autoDisableThreshold },
          fence,
        );
        for (let i = 0; i < results.length; i++) {
          const r = results[i]!;
          const s = due.rows[i]!;
          if (r.status === 'fired') report.fired += r.jobIds.length;
          else if (r.status === 'stale') report.stale++;
          else {
            report.failed++;
            this.logger.warn(
              { scheduleId: s.id, actor: s.actor, schedule: s.name, error: r.failure },
              'cron-fire-failed',
            );
          }
          if (r.disabled) {
            report.disabled++;
            this.logger.warn(
              {
                scheduleId: s.id,
                actor: s.actor,
                schedule: s.name,
                failures: this.options.autoDisableThreshold,
                error: r.failure,
              },
              'cron-schedule-auto-disabled',
            );
          }
        }
        if (due.rows.length < CRON_FIRE_BATCH) return;
      }
    });
    return report;
  }

  /** What `s` fires now: its slots within the catch-up window up to `now`, and where it goes next. */
  private async decide(
    s: ScheduleRecord,
    now: Date,
    slots: SlotMemo,
    limits: ReadonlyMap<string, number | null>,
  ): Promise<ScheduleFireDecision> {
    const spec: CronSpec = { expression: s.cronExpr, timezone: s.timezone, dstStrategy: s.dstStrategy };
    const expected = s.nextFireAt!;
    const windowStart = now.getTime() - Math.max(this.options.catchUpWindowMs, CRON_ON_TIME_GRACE_MS);
    let from = expected;
    if (from.getTime() < windowStart) {
      // Re-anchored: the slots before the window are skipped, the chain goes on from the window.
      const first = slots.after(spec, windowStart - 1);
      this.logger.info(
        { scheduleId: s.id, actor: s.actor, schedule: s.name, from: expected, to: first },
        'cron-slots-skipped',
      );
      if (first === null)
        return { scheduleId: s.id, expectedNextFireAt: expected, fires: [], nextFireAt: null, failure: null };
      from = first;
    }
    const due: Date[] = [];
    let next: Date | null = from;
    while (next !== null && next.getTime() <= now.getTime() && due.length < CRON_SLOTS_PER_DECISION) {
      due.push(next);
      next = slots.after(spec, next.getTime());
    }
    try {
      const fires = [];
      for (const fireAt of due) fires.push({ fireAt, job: await this.job(s, fireAt, limits) });
      return { scheduleId: s.id, expectedNextFireAt: expected, fires, nextFireAt: next, failure: null };
    } catch (err) {
      const e = err as Error;
      return {
        scheduleId: s.id,
        expectedNextFireAt: expected,
        fires: [],
        nextFireAt: next,
        failure: `${e.name ?? 'Error'}: ${e.message ?? String(err)}`.slice(0, 2000),
      };
    }
  }

  /** The job of one slot, built and validated as `enqueue()` would. */
  private async job(
    s: ScheduleRecord,
    fireAt: Date,
    limits: ReadonlyMap<string, number | null>,
  ): Promise<EnqueueArgs> {
    const actor = this.options.actors.get(s.actor);
    if (!actor)
      throw new Error(
        `actor ${JSON.stringify(s.actor)} is not registered in the leader's worker: run the scheduled actors on every worker that may lead`,
      );
    let payload: unknown = s.staticPayload ?? {};
    if (s.payloadFactory !== null) {
      const factory = this.options.factories.get(s.payloadFactory);
      if (!factory)
        throw new Error(
          `payload factory ${JSON.stringify(s.payloadFactory)} is not registered in the leader's worker`,
        );
      payload = await withDeadline(
        Promise.resolve().then(() =>
          factory({ scheduleId: s.id, scheduleName: s.name, actor: s.actor, fireAt: new Date(fireAt) }),
        ),
        PAYLOAD_FACTORY_TIMEOUT_MS,
        `payload factory ${JSON.stringify(s.payloadFactory)} did not return within ${PAYLOAD_FACTORY_TIMEOUT_MS} ms`,
      );
    }
    const json = await payloadJson(actor, payload, 'schedule payload', this.options.payloadMaxBytes);
    return buildEnqueueArgs(
      actor,
      json,
      {
        ...(s.identityKey !== null ? { identityKey: s.identityKey } : {}),
        metadata: { schedule_id: s.id, schedule_name: s.name, fire_at: fireAt.toISOString() },
      },
      {
        maxPending: limits.get(s.actor) ?? actor.maxPending,
        idempotencyMaxBytes: this.options.idempotencyMaxBytes,
      },
    );
  }
}

/**
 * The next slot after an instant, per spec, remembered for one batch. The dates it returns are
 * shared between decisions: nothing may change them.
 */
class SlotMemo {
  private readonly known = new Map<string, Date | null>();

  after(spec: CronSpec, afterMs: number): Date | null {
    const key = `${spec.expression}\u0000${spec.timezone}\u0000${spec.dstStrategy}\u0000${afterMs}`;
    let next = this.known.get(key);
    if (next === undefined) {
      next = fireTimesAfter(spec, new Date(afterMs), 1)[0] ?? null;
      this.known.set(key, next);
    }
    return next;
  }
}

function withDeadline<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(message)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
