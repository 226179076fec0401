/**
 * Cron schedules in the in-memory backend: the same rules as `sql/schedules.sql`, on its clock.
 * Each call runs without an await between its reads and writes, which is what makes it atomic.
 */
import { ScheduleExistsError } from '../../errors/schedule-errors.js';
import {
  CRON_FIRE_HISTORY,
  type DueSchedules,
  type NextSlot,
  type ScheduleCreateArgs,
  type ScheduleFilter,
  type ScheduleFireDecision,
  type ScheduleFireRecord,
  type ScheduleFireResult,
  type ScheduleRecord,
  type ScheduleSkipResult,
  type ScheduleUpdateArgs,
} from '../schedule-types.js';
import type { JobRow } from '../types.js';
import { gateAndBuild } from './memory-enqueue.js';

/** What the schedules read and write of the backend around them. */
export interface MemoryScheduleHost {
  now(): Date;
  /** Every stored job (the gates look at them). */
  jobs(): JobRow[];
  /** Stores new jobs and wakes the workers. */
  insert(rows: readonly JobRow[]): void;
}

const clone = <T>(v: T): T => structuredClone(v);

/** The schedules and their fire history, held by `InMemoryBackend`. */
export class MemorySchedules {
  private readonly byId = new Map<string, ScheduleRecord>();
  private readonly fires = new Map<string, ScheduleFireRecord[]>();

  constructor(private readonly host: MemoryScheduleHost) {}

  clear(): void {
    this.byId.clear();
    this.fires.clear();
  }

  private find(actor: string, name: string): ScheduleRecord | undefined {
    for (const s of this.byId.values()) if (s.actor === actor && s.name === name) return s;
    return undefined;
  }

  private build(a: ScheduleCreateArgs, nextSlot: NextSlot): ScheduleRecord {
    const now = this.host.now();
    const staticPayload: unknown = a.staticPayloadJson === null ? undefined : JSON.parse(a.staticPayloadJson);
    return {
      id: a.id,
      actor: a.actor,
      name: a.name,
      cronExpr: a.cronExpr,
      timezone: a.timezone,
      dstStrategy: a.dstStrategy,
      payloadFactory: a.payloadFactory,
      staticPayload,
      identityKey: a.identityKey,
      enabled: a.enabled,
      nextFireAt: nextSlot(now, a),
      lastFiredAt: null,
      lastFireError: null,
      consecutiveFailures: 0,
      metadata: staticPayload === undefined ? {} : { static_payload: staticPayload },
      createdAt: now,
      updatedAt: now,
    };
  }

  create(a: ScheduleCreateArgs, nextSlot: NextSlot): ScheduleRecord {
    if (this.find(a.actor, a.name)) throw new ScheduleExistsError(a.actor, a.name);
    const s = this.build(a, nextSlot);
    this.byId.set(s.id, s);
    return clone(s);
  }

  ensure(
    list: readonly ScheduleCreateArgs[],
    nextSlot: NextSlot,
  ): { record: ScheduleRecord; created: boolean }[] {
    return list.map((a) => {
      const existing = this.find(a.actor, a.name);
      if (existing) return { record: clone(existing), created: false };
      const s = this.build(a, nextSlot);
      this.byId.set(s.id, s);
      return { record: clone(s), created: true };
    });
  }

  get(id: string): ScheduleRecord | null {
    const s = this.byId.get(id);
    return s ? clone(s) : null;
  }

  list(filter: ScheduleFilter): ScheduleRecord[] {
    return [...this.byId.values()]
      .filter(
        (s) =>
          (filter.actor === undefined || s.actor === filter.actor) &&
          (filter.enabled === undefined || s.enabled === filter.enabled),
      )
      .sort((a, b) =>
        a.actor !== b.actor
          ? a.actor < b.actor
            ? -1
            : 1
          : a.name !== b.name
            ? a.name < b.name
              ? -1
              : 1
            : a.id < b.id
              ? -1
              : 1,
      )
      .map(clone);
  }

  update(id: string, change: ScheduleUpdateArgs, nextSlot: NextSlot): ScheduleRecord | null {
    const s = this.byId.get(id);
    if (!s) return null;
    const now = this.host.now();
    if (change.cronExpr !== undefined) {
      s.cronExpr = change.cronExpr;
      s.nextFireAt = nextSlot(now, s);
    }
    if (change.enabled !== undefined) {
      // Slots that passed while it was off do not fire: the chain is re-anchored on the clock.
      if (change.enabled && !s.enabled && s.nextFireAt !== null && s.nextFireAt.getTime() <= now.getTime())
        s.nextFireAt = nextSlot(now, s);
      s.enabled = change.enabled;
      if (change.enabled) {
        s.consecutiveFailures = 0;
        s.lastFireError = null;
      }
    }
    if (change.fireNow) s.nextFireAt = now;
    if (change.payloadFactory !== undefined) s.payloadFactory = change.payloadFactory;
    if (change.staticPayloadJson !== undefined) {
      const { static_payload: _gone, ...rest } = s.metadata;
      s.staticPayload = change.staticPayloadJson === null ? undefined : JSON.parse(change.staticPayloadJson);
      s.metadata = s.staticPayload === undefined ? rest : { ...rest, static_payload: s.staticPayload };
    }
    s.updatedAt = now;
    return clone(s);
  }

  /** `skipScheduleFire` of `sql/schedules.sql`: the next slot passed over, nothing fired. */
  skip(id: string, slotAfter: NextSlot, expected: Date | undefined): ScheduleSkipResult | null {
    const s = this.byId.get(id);
    if (!s) return null;
    const slot = s.nextFireAt;
    if (slot === null || (expected !== undefined && slot.getTime() !== expected.getTime()))
      return { record: clone(s), skipped: null };
    s.nextFireAt = slotAfter(slot, s);
    s.updatedAt = this.host.now();
    return { record: clone(s), skipped: new Date(slot.getTime()) };
  }

  delete(id: string): boolean {
    this.fires.delete(id);
    return this.byId.delete(id);
  }

  due(limit: number): DueSchedules {
    const now = this.host.now();
    const rows = [...this.byId.values()]
      .filter((s) => s.enabled && s.nextFireAt !== null && s.nextFireAt.getTime() <= now.getTime())
      .sort((a, b) => a.nextFireAt!.getTime() - b.nextFireAt!.getTime())
      .slice(0, limit)
      .map(clone);
    return { rows, now };
  }

  listFires(id: string, limit: number): ScheduleFireRecord[] {
    return (this.fires.get(id) ?? []).slice(0, limit).map(clone);
  }

  fire(decisions: readonly ScheduleFireDecision[], autoDisableThreshold: number): ScheduleFireResult[] {
    const now = this.host.now();
    return decisions.map((d) => {
      const s = this.byId.get(d.scheduleId);
      if (!s || !s.enabled || s.nextFireAt?.getTime() !== d.expectedNextFireAt.getTime())
        return { scheduleId: d.scheduleId, status: 'stale', jobIds: [], failure: null, disabled: false };
      let failure = d.failure;
      const jobIds: string[] = [];
      if (failure === null) {
        // The gates see the stored jobs and this decision's own, as one transaction would.
        const staged: JobRow[] = [];
        try {
          for (const f of d.fires) {
            const out = gateAndBuild(f.job, [...this.host.jobs(), ...staged], now);
            if ('existing' in out) jobIds.push(out.existing.id);
            else {
              staged.push(out.insert);
              jobIds.push(out.insert.id);
            }
          }
          this.host.insert(staged);
        } catch (err) {
          failure = `${(err as Error).name}: ${(err as Error).message}`;
          jobIds.length = 0;
        }
      }
      s.nextFireAt = d.nextFireAt;
      s.updatedAt = now;
      if (failure === null) {
        // A decision that fires nothing (every slot skipped by a catch-up) is no success: the
        // failure count stays.
        if (d.fires.length > 0) {
          s.lastFiredAt = now;
          s.consecutiveFailures = 0;
        }
        const history = this.fires.get(s.id) ?? [];
        d.fires.forEach((f, i) =>
          history.unshift({ scheduleId: s.id, fireAt: f.fireAt, jobId: jobIds[i]!, firedAt: now }),
        );
        history.sort((a, b) => b.fireAt.getTime() - a.fireAt.getTime());
        this.fires.set(s.id, history.slice(0, CRON_FIRE_HISTORY));
        return { scheduleId: s.id, status: 'fired', jobIds, failure: null, disabled: false };
      }
      s.consecutiveFailures++;
      s.lastFireError = failure;
      const disabled = s.consecutiveFailures >= autoDisableThreshold;
      if (disabled) s.enabled = false;
      return { scheduleId: s.id, status: 'failed', jobIds: [], failure, disabled };
    });
  }
}
