/**
 * Issue 64's acceptance for cron under leader failover: three worker processes, 50 schedules firing
 * every second, the maintenance leader SIGKILLed again and again (a replacement started each time,
 * so three stay up). Whatever the leader was doing when it died — deciding, writing a batch, idle —
 * every slot of every schedule, from its first slot to its last fired one, made exactly one job:
 * no duplicate, no gap, none before its slot (database clock).
 *
 * The lease is short (1 s heartbeat, 4 s lease) and the catch-up window at its default (1 h), so
 * a failover makes the slots it covers late, never skipped. The figures (slots, kills, lateness)
 * are printed; the test asserts outcomes only.
 */
import { describe, expect, it } from 'vitest';

import type { ScheduleHandle } from '../../src/client/schedules.js';
import { CRON_FIRE_HISTORY } from '../../src/backend/schedule-types.js';
import { FAST_RECLAIM_ENV, useProcessFleet } from '../helpers/process-fleet.js';
import { waitFor } from '../helpers/wait.js';
import type { WorkerProcess } from '../helpers/worker-process.js';

/** Schedules firing every second. */
const SCHEDULES = 50;
/** Leaders SIGKILLed. */
const KILLS = 6;
/** Slots every schedule fires under a leader before it is killed (and under the last one). */
const SLOTS_PER_LEADER = 8;

const fleet = useProcessFleet('cronkill', { ...FAST_RECLAIM_ENV, TQ_FIXTURE_ACTORS: 'cron' });

const q = async <R extends Record<string, unknown>>(sql: string, values: unknown[] = []): Promise<R[]> =>
  (await fleet.db.pool.query<R>(sql.replaceAll('$S', `"${fleet.db.schema}"`), values)).rows;

interface Lease {
  worker_id: string;
  term: string;
  acquired_at: Date;
}

const lease = async (): Promise<Lease> =>
  (
    await q<Lease & Record<string, unknown>>(
      `SELECT worker_id, term::text AS term, acquired_at FROM $S.maintenance_leader`,
    )
  )[0]!;

/** Slots fired (one row per schedule and slot) since `since`, database clock. */
const firedSince = async (since: Date): Promise<number> =>
  (await q<{ n: number }>(`SELECT count(*)::int AS n FROM $S.cron_fires WHERE fired_at >= $1`, [since]))[0]!
    .n;

/**
 * Where the leader is when it dies: `idle` wherever it happens to be (mostly between ticks);
 * `locking` inside a fire batch's transaction, waiting for a schedule's row lock (before any job is
 * written); `writing` inside it too, its jobs inserted, waiting to record a slot.
 */
type KillMode = 'idle' | 'locking' | 'writing';
const KILL_MODES: readonly KillMode[] = ['idle', 'locking', 'writing'];

/**
 * Holds the leader's next fire batch inside its transaction (for `locking` and `writing`), from a
 * transaction of the test's own on schedule `id`: a row lock on the schedule (the batch's
 * `lockDueForFire` waits for it), or an uncommitted `cron_fires` row of its next slot (the batch's
 * slot insert waits for it, after its jobs went in). Resolves once the leader waits, with the
 * function that rolls the test's transaction back.
 */
async function holdLeaderInFireBatch(mode: KillMode, id: string): Promise<() => Promise<void>> {
  if (mode === 'idle') return async () => undefined;
  const client = await fleet.db.pool.connect();
  const S = `"${fleet.db.schema}"`;
  await client.query('BEGIN');
  if (mode === 'locking')
    await client.query(`SELECT 1 FROM ${S}.cron_schedules WHERE id = $1 FOR UPDATE`, [id]);
  else
    // Read and inserted in one statement: a row comes back only for a slot no batch has written
    // (one in flight writing it makes this insert wait, then do nothing: try the next slot).
    for (;;) {
      const held = await client.query(
        `INSERT INTO ${S}.cron_fires (schedule_id, fire_at, job_id)
         SELECT id, next_fire_at, gen_random_uuid() FROM ${S}.cron_schedules WHERE id = $1
         ON CONFLICT DO NOTHING RETURNING fire_at`,
        [id],
      );
      if (held.rowCount === 1) break;
    }
  const release = async (): Promise<void> => {
    await client.query('ROLLBACK');
    client.release();
  };
  const waiting =
    mode === 'locking' ? `%${fleet.db.schema}%cron_schedules%FOR UPDATE%` : `%INSERT INTO ${S}.cron_fires%`;
  try {
    await waitFor(
      async () =>
        (
          await q(
            `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> $1 AND query LIKE $2`,
            [(client as unknown as { processID: number }).processID, waiting],
          )
        ).length > 0,
      15_000,
      `the leader's fire batch to wait (${mode})`,
    );
  } catch (err) {
    // Not left open: the schema's drop at the end would wait for it.
    await release();
    throw err;
  }
  return release;
}

describe('cron under leader failover', () => {
  it('fires every slot of every schedule exactly once, never early, while the leader is SIGKILLed again and again', async () => {
    const live = new Map<string, WorkerProcess>();
    const startOne = async (): Promise<void> => {
      const p = fleet.start();
      const { workerId } = await p.ready;
      live.set(workerId, p);
    };
    await Promise.all([startOne(), startOne(), startOne()]);

    const handles: ScheduleHandle[] = await Promise.all(
      Array.from({ length: SCHEDULES }, (_, i) =>
        fleet.tq.createSchedule('cron_tick', '* * * * * *', { name: `tick-${i}` }),
      ),
    );
    const firstSlot = new Map(handles.map((h) => [h.id, h.record.nextFireAt!.getTime()]));

    const terms: bigint[] = [];
    const modes: KillMode[] = [];
    for (let k = 0; ; k++) {
      // A leader among the live processes, with a term no killed leader held, that fired a few
      // slots of every schedule since it took over.
      let current: Lease | null = null;
      await waitFor(
        async () => {
          const l = await lease();
          if (!live.has(l.worker_id) || (terms.length > 0 && BigInt(l.term) <= terms.at(-1)!)) return false;
          current = l;
          return (await firedSince(l.acquired_at)) >= SCHEDULES * SLOTS_PER_LEADER;
        },
        60_000,
        `leader ${k + 1} to take over and fire ${SLOTS_PER_LEADER} slots of every schedule`,
      );
      const leader: Lease = current!;
      terms.push(BigInt(leader.term));
      if (k === KILLS) break;
      const p = live.get(leader.worker_id)!;
      const mode = KILL_MODES[k % KILL_MODES.length]!;
      const release = await holdLeaderInFireBatch(mode, handles[k % SCHEDULES]!.id);
      p.proc.kill('SIGKILL');
      expect((await p.exited).signal).toBe('SIGKILL');
      // The dead leader's open transaction goes on waiting; it can never commit (its client is
      // gone), and the next leader's takeover waits for it to end (the fence's row lock).
      await release();
      modes.push(mode);
      live.delete(leader.worker_id);
      // The replacement starts while the survivors elect the next leader.
      await startOne();
    }

    // Stop the load. A disable waits for the row lock of a fire batch in flight, and a batch that
    // locks the row afterwards sees it disabled and writes nothing: once every disable returned,
    // what is stored is final.
    await Promise.all(handles.map((h) => h.disable()));
    await waitFor(
      async () =>
        (await q(`SELECT 1 FROM $S.cron_schedules WHERE enabled AND next_fire_at <= clock_timestamp()`))
          .length === 0,
      10_000,
      'no schedule to be due',
    );

    const jobs = await q<{ id: string; sid: string; fire_at: Date; created_at: Date; status: string }>(
      `SELECT id, metadata ->> 'schedule_id' AS sid, (metadata ->> 'fire_at')::timestamptz AS fire_at,
              created_at, status::text AS status
       FROM $S.jobs WHERE metadata ? 'schedule_id' ORDER BY 2, 3`,
    );
    const fires = await q<{ sid: string; fire_at: Date; job_id: string }>(
      `SELECT schedule_id::text AS sid, fire_at, job_id::text AS job_id FROM $S.cron_fires ORDER BY 1, 2`,
    );
    const stored = new Map(
      (await fleet.tq.listSchedules({ actor: 'cron_tick' })).map((s) => [s.id, s.nextFireAt!.getTime()]),
    );

    let maxLateMs = 0;
    let minSlots = Infinity;
    for (const h of handles) {
      const mine = jobs.filter((j) => j.sid === h.id);
      const slots = mine.map((j) => j.fire_at.getTime());
      minSlots = Math.min(minSlots, slots.length);
      // From the schedule's first slot, every second once, up to the slot before its stored next one.
      expect(slots[0], `first slot of ${h.id}`).toBe(firstSlot.get(h.id));
      const expected = Array.from({ length: slots.length }, (_, i) => firstSlot.get(h.id)! + i * 1000);
      expect(slots, `slots of ${h.id}: one job each, no gap`).toEqual(expected);
      expect(stored.get(h.id), `next slot of ${h.id}`).toBe(slots.at(-1)! + 1000);
      // The fire records kept (the latest CRON_FIRE_HISTORY) name the same slots and jobs.
      const kept = mine
        .slice(-CRON_FIRE_HISTORY)
        .map((j) => ({ sid: h.id, fire_at: j.fire_at, job_id: j.id }));
      expect(fires.filter((f) => f.sid === h.id)).toEqual(kept);
      for (const j of mine) {
        const late = j.created_at.getTime() - j.fire_at.getTime();
        expect(late, `job ${j.id} of slot ${j.fire_at.toISOString()} made early`).toBeGreaterThanOrEqual(0);
        maxLateMs = Math.max(maxLateMs, late);
      }
    }
    expect(minSlots).toBeGreaterThanOrEqual((KILLS + 1) * SLOTS_PER_LEADER);
    for (let i = 1; i < terms.length; i++) expect(terms[i]!).toBeGreaterThan(terms[i - 1]!);

    // The fleet ran them all, including those a killed worker was running (reclaimed, run again).
    await waitFor(
      async () =>
        (await q(`SELECT 1 FROM $S.jobs WHERE metadata ? 'schedule_id' AND status <> 'succeeded' LIMIT 1`))
          .length === 0,
      60_000,
      'every fired job to succeed',
    );
    const lateness = jobs.map((j) => j.created_at.getTime() - j.fire_at.getTime()).sort((a, b) => a - b);
    console.log(
      `cron under leader failover: ${jobs.length} slots of ${SCHEDULES} schedules (${minSlots}–${Math.max(
        ...handles.map((h) => jobs.filter((j) => j.sid === h.id).length),
      )} each), ${KILLS} leaders SIGKILLed (${modes.join(', ')}; terms ${terms.join(' → ')}), each slot fired once; ` +
        `lateness (job created_at − slot, database clock) p50 ${lateness[Math.floor(lateness.length / 2)]} ms, ` +
        `p99 ${lateness[Math.floor(lateness.length * 0.99)]} ms, max ${maxLateMs} ms ` +
        `(heartbeat ${FAST_RECLAIM_ENV.TASKQ_HEARTBEAT_INTERVAL} s, lease ${FAST_RECLAIM_ENV.TASKQ_LOCK_LEASE} s)`,
    );
  }, 240_000);
});
