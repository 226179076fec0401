import type { JobRow, JobStatus } from '../types.js';
import type { DispatchRequest, Settlement, SettleResult } from '../worker-types.js';
import type { MemoryState, StatusChange } from './memory-state.js';

const us = (d: Date): number => d.getTime() * 1000;
const clone = <T>(v: T): T => structuredClone(v);

/** Mirrors the dispatch statement (postgres/sql/dispatch.sql): same selection, order and caps. */
export function dispatchBatch(s: MemoryState, req: DispatchRequest): JobRow[] {
  if (req.limit <= 0 || req.actors.length === 0 || req.queues.length === 0) return [];
  const now = s.clock.now();
  const running = [...s.jobs.values()].filter((j) => j.status === 'running');
  const runningIdentities = new Set(
    running.filter((j) => j.identityKey !== null).map((j) => `${j.actor}\u0000${j.identityKey}`),
  );
  type Candidate = { row: JobRow; rank: number };
  const capacity = new Map<string, { max: number | null; inFlight: number; residual: number }>();
  const candidates: Candidate[] = [];
  for (const a of req.actors) {
    const max = s.actorConfig.get(a.name)?.maxConcurrent ?? a.maxConcurrent;
    const inFlight = running.filter((j) => j.actor === a.name).length;
    const residual = max === null ? req.limit : Math.min(req.limit, max - inFlight);
    capacity.set(a.name, { max, inFlight, residual });
    if (residual <= 0) continue;
    for (const queue of req.queues) {
      const pending = [...s.jobs.values()]
        .filter(
          (j) => j.status === 'pending' && j.queue === queue && j.actor === a.name && j.scheduledAt <= now,
        )
        .sort(
          (x, y) =>
            y.priority - x.priority || us(x.scheduledAt) - us(y.scheduledAt) || (x.id < y.id ? -1 : 1),
        );
      let ranked: Candidate[];
      if ((s.queueModes.get(queue) ?? 'strict_fifo') === 'round_robin') {
        const perKey = new Map<string, number>();
        ranked = pending.map((row) => {
          const key = row.fairnessKey ?? '__null__';
          const rank = (perKey.get(key) ?? 0) + 1;
          perKey.set(key, rank);
          return { row, rank };
        });
        ranked.sort(
          (x, y) =>
            x.rank - y.rank ||
            y.row.priority - x.row.priority ||
            us(x.row.scheduledAt) - us(y.row.scheduledAt) ||
            (x.row.id < y.row.id ? -1 : 1),
        );
      } else {
        ranked = pending.map((row) => ({ row, rank: 1 }));
      }
      candidates.push(...ranked.slice(0, residual * req.oversample));
    }
  }
  const order = (x: Candidate, y: Candidate): number =>
    x.rank - y.rank ||
    y.row.priority - x.row.priority ||
    us(x.row.scheduledAt) - us(y.row.scheduledAt) ||
    (x.row.id < y.row.id ? -1 : 1);
  const seenIdentity = new Set<string>();
  const deduped = candidates
    .sort(order)
    .filter((c) => {
      if (c.row.identityKey === null) return true;
      const key = `${c.row.actor}\u0000${c.row.identityKey}`;
      if (runningIdentities.has(key) || seenIdentity.has(key)) return false;
      seenIdentity.add(key);
      return true;
    })
    .slice(0, req.limit);
  const perActor = new Map<string, number>();
  const chosen: JobRow[] = [];
  for (const c of deduped) {
    const cap = capacity.get(c.row.actor)!;
    if (cap.max !== null) {
      if (cap.inFlight >= cap.max) continue;
      const rank = (perActor.get(c.row.actor) ?? 0) + 1;
      perActor.set(c.row.actor, rank);
      if (rank > cap.max - cap.inFlight) continue;
    }
    chosen.push(c.row);
  }
  // Rows come back by priority, then time (the statement's final order): the first `startNow` of
  // them go straight to a free slot and are recorded as started; the others wait unstarted.
  chosen.sort(
    (x, y) => y.priority - x.priority || us(x.scheduledAt) - us(y.scheduledAt) || (x.id < y.id ? -1 : 1),
  );
  const startNow = Math.max(0, Math.min(req.startNow ?? req.limit, req.limit));
  const claimed: JobRow[] = [];
  for (const [i, row] of chosen.entries()) {
    Object.assign(row, {
      status: 'running',
      attempt: row.attempt + 1,
      startedAt: i < startNow ? now : null,
      lockedByWorker: req.workerId.toLowerCase(),
      lockExpiresAt: new Date(now.getTime() + req.leaseMs),
      lastHeartbeatAt: now,
    } satisfies Partial<JobRow>);
    s.event(row.id, 'state_change', {
      from_state: 'pending',
      to_state: 'running',
      reason: 'dispatched',
      worker_id: req.workerId,
      attempt: row.attempt,
    });
    claimed.push(clone(row));
  }
  return claimed;
}

/** Mirrors `markStarted` (postgres/sql/dispatch.sql): the jobs still owned are recorded as started. */
export function markStarted(s: MemoryState, workerId: string, jobIds: readonly string[]): string[] {
  const now = s.clock.now();
  const marked: string[] = [];
  for (const id of jobIds) {
    const r = s.jobs.get(id);
    if (!r || r.status !== 'running' || r.lockedByWorker !== workerId.toLowerCase()) continue;
    r.startedAt = now;
    marked.push(id);
  }
  return marked;
}

/** Mirrors the settle statement (postgres/sql/settle.sql): ownership guard, outcomes, history rows. */
export function settle(st: MemoryState, items: readonly Settlement[]): SettleResult[] {
  const out: SettleResult[] = [];
  const done: string[] = [];
  const changes: StatusChange[] = [];
  let wake = false;
  for (const s of items) {
    const r = st.jobs.get(s.jobId);
    if (!r || r.status !== 'running' || r.lockedByWorker !== s.workerId.toLowerCase()) {
      out.push({ jobId: s.jobId, status: 'noop', errorClass: null });
      continue;
    }
    const now = st.clock.now();
    const delay = s.kind === 'failed' ? s.retryDelayMs : s.kind === 'reschedule' ? s.delayMs : null;
    const deadlineHit =
      delay !== null && r.scheduleToClose !== null && now.getTime() + delay > r.scheduleToClose.getTime();
    const budgetHit =
      s.kind === 'reschedule' && s.consumeBudget && r.retryKind === 'transient' && r.attempt >= r.maxAttempts;
    const cancelRequested = r.cancelRequestedAt !== null;
    let status: JobStatus;
    if (s.kind === 'succeeded') status = 'succeeded';
    else if (s.kind === 'cancelled') status = 'cancelled';
    else if (s.kind === 'failed' && (delay === null || deadlineHit)) status = 'failed';
    else if (s.kind === 'reschedule' && (deadlineHit || budgetHit)) status = 'failed';
    else if (cancelRequested) status = 'cancelled';
    else if (s.kind === 'release' || (delay ?? 0) === 0) status = 'pending';
    else status = 'scheduled';
    const error = 'error' in s ? s.error : null;
    let errorClass = error?.errorClass ?? null;
    if ((s.kind === 'failed' || s.kind === 'reschedule') && deadlineHit) errorClass = 'DeadlineExceeded';
    else if (budgetHit) errorClass = 'MaxAttemptsExceeded';
    const ranAttempt = r.attempt;
    const again = status === 'pending' || status === 'scheduled';
    const giveBack = s.kind === 'release' || (s.kind === 'reschedule' && !s.consumeBudget);
    if (giveBack) r.attempt -= 1; // used no budget, whatever status the job ends in
    if (again) r.scheduledAt = new Date(now.getTime() + (delay ?? 0));
    r.status = status;
    changes.push({ job: r, from: 'running' });
    r.finishedAt = again ? null : now;
    r.lockedByWorker = null;
    r.lockExpiresAt = null;
    if (status === 'succeeded') {
      r.errorClass = null;
      r.errorMessage = null;
      r.errorTraceback = null;
    } else {
      r.errorClass = errorClass ?? r.errorClass;
      r.errorMessage = error?.message ?? r.errorMessage;
      r.errorTraceback = error?.traceback ?? r.errorTraceback;
    }
    if (s.kind === 'succeeded') {
      r.result = s.resultJson === null ? null : (JSON.parse(s.resultJson) as unknown);
      r.resultSizeBytes = s.resultSizeBytes;
      const ttl = st.actorConfig.get(r.actor)?.resultTtlMs ?? s.fallbackResultTtlMs;
      if (ttl !== null && ttl !== undefined) r.resultExpiresAt = new Date(now.getTime() + ttl);
    }
    if (s.progress && s.progress.seq > r.progressSeq) {
      r.progressSeq = s.progress.seq;
      r.progressState = clone(s.progress.state);
    }
    if (again) r.cancelPhase = 0;
    if (s.heartbeatDetailsJson !== undefined && s.heartbeatDetailsJson !== null)
      r.heartbeatDetails = JSON.parse(s.heartbeatDetailsJson) as unknown;
    const outcome = s.kind === 'reschedule' ? s.outcome : s.kind === 'release' ? 'interrupted' : s.kind;
    st.attempts().push({
      jobId: r.id,
      attempt: ranAttempt,
      workerId: s.workerId.toLowerCase(),
      startedAt: s.handlerStartedAt,
      finishedAt: now,
      durationMs: s.durationMs,
      outcome,
      errorClass: s.kind === 'succeeded' ? null : (error?.errorClass ?? null),
      errorMessage: s.kind === 'succeeded' ? null : (error?.message ?? null),
      errorTraceback: s.kind === 'succeeded' ? null : (error?.traceback ?? null),
    });
    const reason = s.kind === 'reschedule' ? s.outcome : s.kind === 'release' ? 'worker_shutdown' : s.kind;
    const detail: Record<string, unknown> = {
      from_state: 'running',
      to_state: status,
      reason,
      worker_id: s.workerId.toLowerCase(),
      attempt: ranAttempt,
    };
    if (r.errorClass !== null && status !== 'succeeded') detail.error_class = r.errorClass;
    st.event(r.id, 'state_change', detail);
    if (!again) done.push(r.id);
    if (status === 'pending') wake = true;
    out.push({ jobId: r.id, status, errorClass: status === 'succeeded' ? null : r.errorClass });
  }
  st.statusChanged(changes);
  if (done.length > 0) st.emitDone(done);
  if (wake) st.emitWake();
  return out;
}
