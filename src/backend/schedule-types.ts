/**
 * Rows and arguments of cron schedules (`cron_schedules`, `cron_fires`; migration 0004), shared
 * by both backends, the client and the leader's firing loop.
 */
import type { DstStrategy } from '../cron/dst-strategy.js';
import type { EnqueueArgs } from './types.js';

/** How a schedule treats DST gaps and overlaps (docs/cron.md). */
export type ScheduleDstStrategy = DstStrategy;

/** A stored schedule (see docs/cron.md). */
export interface ScheduleRecord {
  id: string;
  actor: string;
  /** `''` for an unnamed schedule; `(actor, name)` is unique. */
  name: string;
  cronExpr: string;
  timezone: string;
  dstStrategy: ScheduleDstStrategy;
  /** The registered name of the payload factory, or null. */
  payloadFactory: string | null;
  /** The static payload (JSON value), or undefined when the schedule has none. */
  staticPayload: unknown;
  identityKey: string | null;
  enabled: boolean;
  /** The next slot to fire (database clock), or null when the expression has none left. */
  nextFireAt: Date | null;
  lastFiredAt: Date | null;
  lastFireError: string | null;
  consecutiveFailures: number;
  /** Free-form metadata (the static payload is kept under `static_payload`). */
  metadata: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
}

/** A new schedule, validated by the caller. */
export interface ScheduleCreateArgs {
  id: string;
  actor: string;
  name: string;
  cronExpr: string;
  timezone: string;
  dstStrategy: ScheduleDstStrategy;
  payloadFactory: string | null;
  /** The static payload as JSON text, or null for none. */
  staticPayloadJson: string | null;
  identityKey: string | null;
  enabled: boolean;
}

/** What `updateSchedule` changes; an absent field stays as it is. */
export interface ScheduleUpdateArgs {
  cronExpr?: string;
  enabled?: boolean;
  /** A name, or null to clear it. */
  payloadFactory?: string | null;
  /** JSON text, or null to remove the static payload. */
  staticPayloadJson?: string | null;
  /** Make the schedule due now (backend clock): the leader fires it at its next tick. */
  fireNow?: true;
}

/**
 * The first slot of a schedule after the database clock's `now` (from its stored expression, zone
 * and strategy); null when there is none. Backends call it with their clock's reading, so the
 * chain's phase is fixed by the database, never by a client's clock.
 */
export type NextSlot = (
  now: Date,
  schedule: { cronExpr: string; timezone: string; dstStrategy: ScheduleDstStrategy },
) => Date | null;

/** Schedules whose next slot is due, and the database clock's reading they were judged by. */
export interface DueSchedules {
  rows: ScheduleRecord[];
  now: Date;
}

/**
 * What the leader decided for one due schedule: the jobs of the slots it fires (in slot order),
 * where its chain goes next, or why the slots failed. Written only if the schedule's stored
 * `next_fire_at` still equals `expectedNextFireAt` (nobody fired or changed it meanwhile).
 */
export interface ScheduleFireDecision {
  scheduleId: string;
  expectedNextFireAt: Date;
  /** One job per slot fired, with the slot it fires. Empty when the slots failed. */
  fires: { fireAt: Date; job: EnqueueArgs }[];
  nextFireAt: Date | null;
  /** Why the slots could not fire (payload factory, validation, unknown actor), or null. */
  failure: string | null;
}

/** What the write did with one decision. */
export interface ScheduleFireResult {
  scheduleId: string;
  /** `stale`: the schedule changed or was fired meanwhile; nothing was written for it. */
  status: 'fired' | 'failed' | 'stale';
  /** Jobs made (the existing one when a gate returned it). */
  jobIds: string[];
  /** The failure recorded (the decision's, or a gate's refusal of a job). */
  failure: string | null;
  /** The failure count reached the threshold: the schedule is now disabled. */
  disabled: boolean;
}

/** A slot a schedule fired (`cron_fires`). */
export interface ScheduleFireRecord {
  scheduleId: string;
  fireAt: Date;
  jobId: string;
  firedAt: Date;
}

/** What `Backend.skipScheduleFire` did. */
export interface ScheduleSkipResult {
  /** The schedule after the call (unchanged when nothing was skipped). */
  record: ScheduleRecord;
  /** The slot passed over, or null when nothing was skipped. */
  skipped: Date | null;
}

/** Filters of `listSchedules`. */
export interface ScheduleFilter {
  actor?: string;
  enabled?: boolean;
}

/** How many fires per schedule `cron_fires` keeps. */
export const CRON_FIRE_HISTORY = 100;
