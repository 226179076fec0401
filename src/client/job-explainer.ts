/**
 * `tq.explain(jobId)`: reads the facts of one job from the backend (`Backend.explainJob`) and
 * decides, here and only here, what they mean — so the Postgres and in-memory backends cannot
 * disagree about a state. See docs/explain.md.
 */
import type { Backend } from '../backend/backend.js';
import type { JobExplainFacts } from '../backend/explain-facts.js';
import { isUuid } from '../core/ids.js';
import { toMs } from '../core/duration.js';
import { checkKnownKeys } from '../core/closest-name.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { queueConcurrencyReservationName } from '../ratelimit/names.js';
import type {
  ExplainOptions,
  ExplainReason,
  ExplainVerdict,
  JobExplanation,
  TerminalReason,
} from './job-explanation.js';

/** Default alive window of a worker: the default `TASKQ_LOCK_LEASE`, as the fleet gauges use. */
export const DEFAULT_EXPLAIN_ALIVE_WITHIN_MS = 60_000;
/** Default longest list of job ids in a reason. */
export const DEFAULT_EXPLAIN_LIST_LIMIT = 10;

const OPTION_KEYS: readonly string[] = ['workerAliveWithin', 'listLimit'];

/**
 * Explains why a job is not running, from the backend's current state.
 * Null when there is no such job (as `tq.get` answers; it may have been pruned to the archive).
 * @throws InvalidArgumentError for a `jobId` that is not a UUID or a bad option (nothing is read)
 */
export async function explainJob(
  backend: Backend,
  jobId: string,
  options: ExplainOptions = {},
): Promise<JobExplanation | null> {
  if (!isUuid(jobId)) throw new InvalidArgumentError('jobId', jobId, 'must be a UUID');
  if (options === null || typeof options !== 'object')
    throw new InvalidArgumentError('explain.options', options, 'must be an object');
  checkKnownKeys(options, OPTION_KEYS, 'explain.options', 'an option of explain()');
  const aliveWithinMs =
    options.workerAliveWithin === undefined
      ? DEFAULT_EXPLAIN_ALIVE_WITHIN_MS
      : toMs(options.workerAliveWithin, 'explain.workerAliveWithin');
  const listLimit = options.listLimit ?? DEFAULT_EXPLAIN_LIST_LIMIT;
  if (typeof listLimit !== 'number' || !Number.isInteger(listLimit) || listLimit < 0 || listLimit > 1000)
    throw new InvalidArgumentError('explain.listLimit', listLimit, 'must be an integer from 0 to 1000');
  const facts = await backend.explainJob({
    jobId: jobId.toLowerCase(),
    aliveWithinMs,
    listLimit,
  });
  return facts ? explanationOf(facts, aliveWithinMs) : null;
}

/** The verdict and the reasons, most decisive first, that `facts` imply (see docs/explain.md). */
export function explanationOf(facts: JobExplainFacts, aliveWithinMs: number): JobExplanation {
  const { job } = facts;
  const reasons = reasonsOf(facts, aliveWithinMs);
  let verdict: ExplainVerdict;
  if (job.status === 'running') verdict = 'running';
  else if (job.status !== 'pending' && job.status !== 'scheduled') verdict = 'finished';
  else verdict = reasons.length === 0 ? 'ready' : 'waiting';
  return {
    jobId: job.id,
    actor: job.actor,
    queue: job.queue,
    status: job.status,
    verdict,
    reasons,
    queueMode: facts.queue.mode,
    checkedAt: facts.now,
  };
}

/**
 * The order is the order of decisiveness: an operator's switch (a drained actor), then what no
 * amount of waiting fixes (no worker runs the actor or serves the queue), then time (the job is
 * not due, or not due again after a denial), then the capacity held by other jobs, narrowest
 * first (one identity key, the actor's cap, the queue's cap), then the line.
 */
function reasonsOf(f: JobExplainFacts, aliveWithinMs: number): ExplainReason[] {
  const { job } = f;
  if (job.status === 'running') return [running(f)];
  if (job.status !== 'pending' && job.status !== 'scheduled') return [terminal(f)];
  const reasons: ExplainReason[] = [];
  const now = f.now.getTime();
  const scheduled = job.scheduledAt.getTime();
  const max = f.actorConfig?.maxConcurrent ?? null;

  if (max === 0)
    reasons.push({
      kind: 'disabled',
      actor: job.actor,
      message:
        `actor ${job.actor} is drained: its stored maxConcurrent is 0; ` +
        `restore it with \`taskq actor-config set ${job.actor} --clear-max-concurrent\` (or a value)`,
    });
  if (f.actorConfig === null)
    reasons.push({
      kind: 'unregistered-actor',
      actor: job.actor,
      message:
        `no worker has registered actor ${job.actor} (it has no actor_config row): ` +
        'start a worker whose module exports it',
    });
  if (f.workers.alive === 0)
    reasons.push({
      kind: 'no-worker',
      queue: job.queue,
      lastSeenAt: f.workers.lastSeenAt,
      aliveWithinMs,
      message:
        `no worker seen in the last ${human(aliveWithinMs)} serves queue ${job.queue}` +
        (f.workers.lastSeenAt === null
          ? ' (no worker is registered for it now)'
          : ` (one was last seen at ${f.workers.lastSeenAt.toISOString()})`) +
        `: start a worker with --queues ${job.queue}`,
    });

  const denial = scheduled > now ? denialOf(f) : null;
  if (denial) reasons.push(denial);
  else if (scheduled > now)
    reasons.push({
      kind: 'scheduled',
      scheduledAt: job.scheduledAt,
      dueInMs: scheduled - now,
      message: `scheduled for ${job.scheduledAt.toISOString()} (in ${human(scheduled - now)})`,
    });
  else if (job.status === 'scheduled')
    reasons.push({
      kind: 'awaiting-promotion',
      scheduledAt: job.scheduledAt,
      overdueMs: now - scheduled,
      leaderAlive: f.leaderAlive,
      message: f.leaderAlive
        ? `due since ${job.scheduledAt.toISOString()}; the maintenance leader moves it to pending on its next sweep`
        : `due since ${job.scheduledAt.toISOString()}, but no worker holds the maintenance leadership ` +
          'that moves due jobs to pending: start a worker (any worker competes for it)',
    });

  if (f.identityHolder !== null && job.identityKey !== null)
    reasons.push({
      kind: 'identity-key',
      identityKey: job.identityKey,
      heldByJobId: f.identityHolder,
      message: `job ${f.identityHolder} of actor ${job.actor} is running with the same identity key ${JSON.stringify(job.identityKey)}; one runs at a time`,
    });
  if (max !== null && max > 0 && f.actorRunning.count >= max)
    reasons.push({
      kind: 'actor-max-concurrent',
      actor: job.actor,
      maxConcurrent: max,
      running: f.actorRunning.count,
      runningJobIds: f.actorRunning.jobIds,
      message:
        `actor ${job.actor} runs ${f.actorRunning.count} job(s), its stored maxConcurrent is ${max}` +
        listed(f.actorRunning.jobIds, f.actorRunning.count),
    });
  const cap = f.queue.maxConcurrent;
  if (cap !== null && f.queueRunning.count >= cap)
    reasons.push({
      kind: 'queue-cap',
      queue: job.queue,
      maxConcurrent: cap,
      running: f.queueRunning.count,
      runningJobIds: f.queueRunning.jobIds,
      message:
        `queue ${job.queue} runs ${f.queueRunning.count} job(s), its cap (max_concurrent) is ${cap}` +
        listed(f.queueRunning.jobIds, f.queueRunning.count),
    });
  if (job.status === 'pending' && f.queue.mode === 'strict_fifo' && f.ahead.count > 0) {
    const n = `${f.ahead.count}${f.ahead.countIsLowerBound ? '+' : ''}`;
    reasons.push({
      kind: 'fifo-head-of-line',
      queue: job.queue,
      ahead: f.ahead.count,
      aheadIsLowerBound: f.ahead.countIsLowerBound,
      headJobIds: f.ahead.jobIds,
      message:
        `${n} due job(s) of actor ${job.actor} are ahead of it in queue ${job.queue} (strict FIFO: priority, then time)` +
        (f.ahead.jobIds[0] === undefined ? '' : `; the head is ${f.ahead.jobIds[0]}`),
    });
  }
  return reasons;
}

/** The limit a not-yet-lifted denial names (the last attempt's outcome), or null. */
function denialOf(f: JobExplainFacts): ExplainReason | null {
  const last = f.lastAttempt;
  if (!last || (last.outcome !== 'rate_limit_denied' && last.outcome !== 'reservation_denied')) return null;
  const name = deniedName(last.errorMessage);
  const liftsAt = f.job.scheduledAt;
  const when = `until ${liftsAt.toISOString()} (in ${human(liftsAt.getTime() - f.now.getTime())})`;
  if (last.outcome === 'rate_limit_denied')
    return {
      kind: 'rate-limit',
      limit: name,
      deniedAt: last.finishedAt,
      liftsAt,
      message: `rate limit ${name === null ? '(name not recorded)' : JSON.stringify(name)} refused its last attempt; it waits ${when}`,
    };
  const queueCap = name !== null && name === queueConcurrencyReservationName(f.job.queue);
  return {
    kind: 'reservation',
    reservation: name,
    queueCap,
    deniedAt: last.finishedAt,
    liftsAt,
    message: queueCap
      ? `queue ${f.job.queue}'s cap had no free slot at its last attempt; it waits ${when}`
      : `reservation ${name === null ? '(name not recorded)' : JSON.stringify(name)} had no free slot at its last attempt; it waits ${when}`,
  };
}

/**
 * The primitive's name in a recorded `ReservationUnavailable` message (`no free slot in
 * reservation "x"; …` or `rate limit exhausted: "x"; …`); null when the message is missing,
 * truncated or redacted.
 */
export function deniedName(message: string | null): string | null {
  const m = /(?:no free slot in reservation|rate limit exhausted:) ("(?:[^"\\]|\\.)*")/.exec(message ?? '');
  if (!m?.[1]) return null;
  try {
    return JSON.parse(m[1]) as string;
  } catch {
    return null;
  }
}

function running(f: JobExplainFacts): ExplainReason {
  const { job, lockHolder } = f;
  const who = job.lockedByWorker ?? '(unknown)';
  const host = lockHolder ? ` on ${lockHolder.hostname}` : '';
  const since = job.startedAt
    ? `since ${job.startedAt.toISOString()}`
    : 'claimed, waiting in its worker to start';
  const alive =
    lockHolder === null
      ? '; the worker is no longer registered (the lease decides: its job is reclaimed when it expires)'
      : lockHolder.alive
        ? ''
        : `; the worker was last seen at ${lockHolder.lastSeenAt.toISOString()} (its job is reclaimed when the lease expires)`;
  return {
    kind: 'running',
    workerId: job.lockedByWorker,
    hostname: lockHolder?.hostname ?? null,
    since: job.startedAt,
    lockExpiresAt: job.lockExpiresAt,
    workerAlive: lockHolder?.alive ?? null,
    cancelRequestedAt: job.cancelRequestedAt,
    message:
      `not waiting: running on worker ${who}${host}, ${since}` +
      (job.cancelRequestedAt ? `; cancel requested at ${job.cancelRequestedAt.toISOString()}` : '') +
      alive,
  };
}

function terminal(f: JobExplainFacts): ExplainReason {
  const status = f.job.status as TerminalReason['status'];
  return {
    kind: 'terminal',
    status,
    finishedAt: f.job.finishedAt,
    message:
      `not waiting: it ended ${status}` +
      (f.job.finishedAt ? ` at ${f.job.finishedAt.toISOString()}` : '') +
      (status === 'succeeded' ? '' : ' (tq.retryJob puts it back to pending)'),
  };
}

/** `: <ids>` and how many more, for a message. */
function listed(ids: readonly string[], count: number): string {
  if (ids.length === 0) return '';
  const more = count > ids.length ? ` and ${count - ids.length} more` : '';
  return `: ${ids.join(', ')}${more}`;
}

/** A rough human duration: `350ms`, `42s`, `5m 3s`, `2h 5m`, `3d 4h`. */
export function human(ms: number): string {
  const t = Math.max(0, Math.round(ms));
  if (t < 1000) return `${t}ms`;
  const s = Math.floor(t / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 ? `${m}m ${s % 60}s` : `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 ? `${h}h ${m % 60}m` : `${h}h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d}d ${h % 24}h` : `${d}d`;
}
