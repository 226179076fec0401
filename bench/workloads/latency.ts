/**
 * Enqueue → handler-start latency, one worker process at concurrency 10:
 * - idle: one job at a time, each enqueued 10 ms after the previous one started, so the worker is
 *   idle when each arrives (at most 200 jobs or 15 s);
 * - under load: a steady offered load of 50 % of the system's measured throughput (the processing
 *   workload's median at c=10 in this run, else a short calibration), issued open-loop every 2 ms
 *   (the jobs due since the previous tick go in one call: single enqueue for one job, bulk for more),
 *   right after a server checkpoint (checkpoint.ts: no loaded phase waits for new WAL files).
 * - at each peer's load (TaskQ with its defaults only): right after every peer's round, a round of
 *   TaskQ's own on another fresh system, idle phase and all, offered the rate that peer was just
 *   offered (half of its own measured throughput), the load the peer's "under 50 % load" row was
 *   measured at — latencies compared at the same offered load, after the same history (case
 *   `peerLoadCase(peer)`, e.g. "at graphile's 50 % load").
 * The enqueue call's start time travels in the payload; the handler records its own start time.
 * Under load the enqueue calls' own durations are reported too (p50 / p99 of the calls made after
 * the warm-up): the latency includes them, and on a machine this size they are much of its tail.
 * The rest is reported on its own: each loaded job's latency from its call's return instead of its
 * start ("call return → start", p50 / p99), what the wake-up path and the worker add. So is where
 * the CPU went in each loaded phase (workload `latency-cpu`, see load-cpu.ts): on two cores shared
 * by the server, the worker and the load generator, the tail follows the moments when every core
 * is taken.
 * `--load-rate n` offers every system the same n jobs/s instead (its own case in the report).
 */
import { clockDisagreement, nowMs, sleep, type BenchPayload } from '../lib/common.js';
import { rotate, shortError, withFreshSystem, type BenchContext } from '../lib/context.js';
import { checkpoint } from '../lib/checkpoint.js';
import { enqueueAll } from '../lib/drain.js';
import { Fleet, type WorkerResult } from '../lib/fleet.js';
import { cpuBetween, cpuSnapshot, type CpuSnapshot } from '../lib/load-cpu.js';
import { percentile } from '../lib/stats.js';
import type { MetricSpec } from '../lib/results.js';
import type { SystemAdapter } from '../systems/types.js';

const P = (p: number): MetricSpec => ({
  metric: `p${p} (ms)`,
  unit: 'ms',
  better: 'lower',
  ratio: p !== 95,
});
const OFFERED: MetricSpec = { metric: 'offered load (jobs/s)', unit: 'jobs/s', better: 'higher' };
const CALL = (p: number): MetricSpec => ({ metric: `enqueue call p${p} (ms)`, unit: 'ms', better: 'lower' });
const AFTER_CALL = (p: number): MetricSpec => ({
  metric: `call return → start p${p} (ms)`,
  unit: 'ms',
  better: 'lower',
});
export const LATENCY_CASES = {
  idle: 'idle worker',
  load: 'under 50 % load',
  /** The one same-load case of runs made before every peer's load was offered (graphile defaults'). */
  legacyPeerLoad: "at graphile-worker's 50 % load",
};
/** The TaskQ configuration offered each peer's load. */
export const PEER_LOAD_SYSTEM = 'taskq';
/** Systems whose load TaskQ is offered: every system that is not a TaskQ configuration. */
export function isPeer(system: string): boolean {
  return !system.startsWith('taskq');
}
/** The case of TaskQ's round offered `peer`'s half-drain rate. */
export function peerLoadCase(peer: string): string {
  return `at ${peer}'s 50 % load`;
}
/** The case name of a run with `--load-rate`: the same absolute load for every system. */
const fixedLoadCase = (rate: number): string => `under a fixed ${rate} jobs/s`;

/**
 * A loaded phase's note when the system fell behind: more than a second of the offered load had
 * not started when the load stopped (its latencies are then a backlog's, not a steady state's).
 */
function behindNote(round: number, notStarted: number, rate: number): string | undefined {
  if (rate <= 0 || notStarted <= rate) return undefined;
  return `round ${round + 1}: fell behind — ${notStarted} jobs (${(notStarted / rate).toFixed(1)} s of the offered load) had not started when the load stopped`;
}

/** Where the CPU went in a loaded phase's measured window (see load-cpu.ts). */
const CPU_WORKLOAD = 'latency-cpu';

/** What one loaded phase returns. */
interface OfferedLoad {
  sent: number;
  /** Durations of the enqueue calls that started after the warm-up. */
  callMs: number[];
  /** When each call returned, by the time it started (the `t` its jobs carry). */
  callEnds: Map<number, number>;
  /** CPU figures from (just before) the end of the warm-up to the last call made, per job sent. */
  cpu: ReturnType<typeof cpuBetween>;
}

/** Offers `rate` jobs/s for `durationMs` to a system whose worker processes are `workerPids`. */
async function offeredLoad(
  sys: SystemAdapter,
  rate: number,
  durationMs: number,
  warmupMs: number,
  firstIndex: number,
  workerPids: readonly number[],
): Promise<OfferedLoad> {
  const start = nowMs();
  const callMs: number[] = [];
  const callEnds = new Map<number, number>();
  let sent = 0;
  let measured: { from: CpuSnapshot; sentBefore: number } | null = null;
  const inflight = new Set<Promise<void>>();
  while (nowMs() - start < durationMs) {
    // The first snapshot (~1–2 ms of reading /proc) is taken just before the warm-up ends, so that
    // the tick it delays is not one whose calls are measured.
    if (measured === null && nowMs() - start >= warmupMs - 20)
      measured = { from: cpuSnapshot(workerPids), sentBefore: sent };
    const due = Math.floor((rate * (nowMs() - start)) / 1000) - sent;
    if (due > 0 && inflight.size < 8) {
      const n = Math.min(due, 1000);
      const t = nowMs();
      const payloads: BenchPayload[] = Array.from({ length: n }, (_, k) => ({ i: firstIndex + sent + k, t }));
      sent += n;
      const p: Promise<void> = (n === 1 ? sys.enqueueOne(payloads[0]!) : sys.enqueueBulk(payloads)).finally(
        () => {
          inflight.delete(p);
          const end = nowMs();
          callEnds.set(t, end);
          if (t - start >= warmupMs) callMs.push(end - t);
        },
      );
      inflight.add(p);
    }
    await sleep(2);
  }
  const cpu = measured ? cpuBetween(measured.from, cpuSnapshot(workerPids), sent - measured.sentBefore) : [];
  await Promise.all(inflight);
  return { sent, callMs, callEnds, cpu };
}

/** A loaded phase as the report needs it. */
interface LoadedPhase {
  /** `nowMs()` from which its latencies count (the end of its warm-up). */
  start: number;
  rate: number;
  callMs: number[];
  /** When each call returned, by the time it started (see `OfferedLoad`). */
  callEnds: Map<number, number>;
  cpu: OfferedLoad['cpu'];
  behind: string | undefined;
}

/** What one round on a fresh system measured: the idle latencies and one loaded phase's. */
interface RoundSamples {
  idle: number[];
  load: number[];
  /**
   * The loaded phase's latencies from the enqueue call's return instead of its start (the part of
   * the latency that is not the call itself; negative when a job started before its call returned).
   */
  afterCall: number[];
  phase: LoadedPhase;
  /** Set when the loaded phase's jobs had not all started 15 s after the load stopped. */
  backlogNote: string | undefined;
}

/**
 * One round of the workload on a fresh system: a worker at c=10, the idle phase, then one loaded
 * phase at the rate `chooseRate` returns (called after the idle phase; it may enqueue jobs of its
 * own to calibrate, and says how many it sent).
 */
async function measureRound(
  ctx: BenchContext,
  sys: SystemAdapter,
  round: number,
  chooseRate: (fleet: Fleet) => Promise<{ rate: number; sent: number }>,
): Promise<RoundSamples> {
  const idleJobs = ctx.opts.quick ? 30 : 200;
  const idleBudgetMs = ctx.opts.quick ? 2000 : 15_000;
  const loadMs = ctx.opts.quick ? 2000 : 5000;
  const warmupMs = ctx.opts.quick ? 500 : 1000;
  const fleet = await Fleet.start(sys.workerSpec(10, 1), { recordLatency: true });
  let sent = 0;
  let phase: LoadedPhase;
  let backlogNote: string | undefined;
  let results: WorkerResult[];
  try {
    await sleep(300); // let the worker settle into its idle wait
    // Idle: one job at a time; the next goes in 10 ms after the previous one started (or after
    // 5 s), so the worker is idle whenever a job arrives.
    const idleDeadline = Date.now() + idleBudgetMs;
    for (let i = 0; i < idleJobs && Date.now() < idleDeadline; i++) {
      await sys.enqueueOne({ i, t: nowMs() });
      sent++;
      await fleet.waitForCount(sent, Date.now() + 5000);
      await sleep(10);
    }
    await fleet.waitForCount(sent, Date.now() + 10_000);
    const chosen = await chooseRate(fleet);
    sent += chosen.sent;
    // The loaded phase, after a checkpoint and a short pause.
    await checkpoint();
    await sleep(200);
    const start = nowMs() + warmupMs;
    const o = await offeredLoad(sys, chosen.rate, loadMs, warmupMs, 2_000_000, fleet.pids);
    sent += o.sent;
    const behind = behindNote(round, sent - fleet.count, chosen.rate);
    phase = { start, rate: chosen.rate, callMs: o.callMs, callEnds: o.callEnds, cpu: o.cpu, behind };
    if (!(await fleet.waitForCount(sent, Date.now() + 15_000)))
      backlogNote = `round ${round + 1}: ${sent - fleet.count} jobs had not started 15 s after the load stopped (tail latencies understated)`;
  } finally {
    results = await fleet.stop();
  }
  const idle: number[] = [];
  const load: number[] = [];
  const afterCall: number[] = [];
  for (const w of results)
    for (let k = 0; k + 1 < w.latencies.length; k += 2) {
      const t = w.latencies[k]!;
      const l = w.latencies[k + 1]!;
      if (l < 0) throw clockDisagreement(`a latency of ${l.toFixed(1)} ms`);
      if (t < phase.start - warmupMs) idle.push(l);
      else if (t >= phase.start) {
        load.push(l);
        const end = phase.callEnds.get(t);
        if (end !== undefined) afterCall.push(t + l - end);
      }
    }
  return { idle, load, afterCall, phase, backlogNote };
}

/** Records one loaded phase's rows: latency percentiles, the offered rate, the calls', the CPU. */
function recordLoad(
  ctx: BenchContext,
  id: SystemAdapter['id'],
  c: string,
  samples: number[],
  afterCall: number[],
  ph: LoadedPhase,
  note?: string,
): void {
  for (const [m, v] of ph.cpu) ctx.results.record(CPU_WORKLOAD, c, m, id, v);
  if (samples.length)
    for (const p of [50, 95, 99]) ctx.results.record('latency', c, P(p), id, percentile(samples, p), note);
  if (ph.rate > 0) ctx.results.record('latency', c, OFFERED, id, ph.rate);
  if (ph.callMs.length)
    for (const p of [50, 99]) ctx.results.record('latency', c, CALL(p), id, percentile(ph.callMs, p));
  if (afterCall.length)
    for (const p of [50, 99]) ctx.results.record('latency', c, AFTER_CALL(p), id, percentile(afterCall, p));
}

export async function runLatency(ctx: BenchContext): Promise<void> {
  for (let round = 0; round < ctx.opts.rounds; round++) {
    for (const id of rotate(ctx.systems, round)) {
      // The rate this system's loaded phase was offered, for TaskQ's round at the same load.
      let offered: number | undefined;
      try {
        await withFreshSystem(id, async (sys) => {
          const r = await measureRound(ctx, sys, round, async (fleet) => {
            // Throughput to offer half of (or the same fixed rate to every system).
            if (ctx.opts.loadRate !== null) return { rate: ctx.opts.loadRate, sent: 0 };
            const measured = ctx.results.median('processing', '1 process, c=10', 'jobs/s', id);
            if (measured !== undefined) return { rate: measured / 2, sent: 0 };
            const before = fleet.count;
            const n = 2000;
            await enqueueAll(sys, n, 1_000_000);
            const t0 = nowMs();
            await fleet.waitForCount(before + n, Date.now() + 5000);
            const rate = (fleet.count - before) / ((nowMs() - t0) / 1000) / 2;
            await fleet.waitForCount(before + n, Date.now() + 60_000);
            return { rate, sent: n };
          });
          offered = r.phase.rate;
          if (r.idle.length)
            for (const p of [50, 95, 99])
              ctx.results.record('latency', LATENCY_CASES.idle, P(p), id, percentile(r.idle, p));
          const loadCase = ctx.opts.loadRate === null ? LATENCY_CASES.load : fixedLoadCase(ctx.opts.loadRate);
          const note = [r.phase.behind, r.backlogNote].filter((n) => n !== undefined).join('; ');
          recordLoad(ctx, id, loadCase, r.load, r.afterCall, r.phase, note || undefined);
          const cpu = r.phase.cpu;
          ctx.log(
            `  latency ${id} round ${round + 1}: idle p50 ${percentile(r.idle, 50).toFixed(1)} / p99 ${percentile(r.idle, 99).toFixed(1)} ms; ` +
              `at ${r.phase.rate.toFixed(0)}/s p50 ${percentile(r.load, 50).toFixed(1)} / p99 ${percentile(r.load, 99).toFixed(1)} ms (${r.load.length} samples; ` +
              `enqueue calls p50 ${percentile(r.phase.callMs, 50).toFixed(1)} / p99 ${percentile(r.phase.callMs, 99).toFixed(1)} ms, ` +
              `from their return p50 ${percentile(r.afterCall, 50).toFixed(1)} / p99 ${percentile(r.afterCall, 99).toFixed(1)} ms` +
              `${cpu.length ? `; ${cpu.map(([m, v]) => `${m.metric} ${v.toFixed(0)}`).join(', ')}` : ''})`,
          );
          for (const n of [r.phase.behind, r.backlogNote])
            if (n !== undefined) ctx.log(`  latency ${id} ${n}`);
        });
      } catch (err) {
        ctx.results.fail('latency', LATENCY_CASES.idle, P(50), id, shortError(err));
        ctx.log(`  latency ${id} round ${round + 1}: FAILED ${shortError(err)}`);
      }
      if (offered !== undefined) await peerLoadRound(ctx, id, offered, round);
    }
  }
}

/**
 * TaskQ (defaults) offered a peer's load: a round of its own on a fresh system, the same procedure
 * as the peer's round (the idle phase, then the loaded phase) at the rate the peer was offered.
 * TaskQ's own round is not reused: after its much larger load the tables hold tens of thousands of
 * dead row versions and autovacuum may be working on them.
 */
async function peerLoadRound(ctx: BenchContext, peer: string, rate: number, round: number): Promise<void> {
  const id = PEER_LOAD_SYSTEM;
  if (ctx.opts.loadRate !== null || !isPeer(peer) || !ctx.systems.includes(id) || rate <= 0) return;
  const c = peerLoadCase(peer);
  try {
    await withFreshSystem(id, async (sys) => {
      const r = await measureRound(ctx, sys, round, () => Promise.resolve({ rate, sent: 0 }));
      if (r.load.length) recordLoad(ctx, id, c, r.load, r.afterCall, r.phase, r.phase.behind);
      ctx.log(
        `  latency ${id} round ${round + 1}: ${c} (${r.phase.rate.toFixed(0)}/s) p50 ${percentile(r.load, 50).toFixed(1)} / p99 ${percentile(r.load, 99).toFixed(1)} ms (${r.load.length} samples)`,
      );
    });
  } catch (err) {
    ctx.log(`  latency ${id} round ${round + 1} ${c}: FAILED ${shortError(err)}`);
  }
}
