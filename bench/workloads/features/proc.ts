/**
 * A worker process of the features workload: loads one system's worker side for one case (spec in
 * BENCH_FEATURE_SPEC), starts it when the harness says `go`, tallies the events its handlers mark,
 * and reports them over IPC. Started by `process.ts` as `node --import tsx proc.ts`, so that no
 * handler competes with the harness's enqueue calls and timers in one event loop.
 */
import { errorMessage, nowMs } from '../../lib/common.js';
import type { FeatureSpec, FeatureTally, FromChild, RunningSide, SideStarter, ToChild } from './protocol.js';

const spec = JSON.parse(process.env.BENCH_FEATURE_SPEC ?? '{}') as FeatureSpec;

function send(msg: FromChild): void {
  process.send?.(msg);
}

/** The side module of a system, imported only in the process that runs it. */
async function loadSide(system: FeatureSpec['system']): Promise<SideStarter> {
  if (system === 'taskq') return (await import('./taskq-side.js')).prepareTaskqSide();
  if (system === 'graphile') return (await import('./graphile-side.js')).graphileSide;
  return (await import('./bullmq-side.js')).bullmqSide;
}

let tally: FeatureTally = { counts: {}, samples: {}, first: {}, last: {} };
let running: RunningSide | null = null;
let ticker: NodeJS.Timeout | null = null;
let cpuAtGo: NodeJS.CpuUsage | undefined;

function mark(kind: string, sample?: number): void {
  const t = nowMs();
  const n = (tally.counts[kind] ?? 0) + 1;
  tally.counts[kind] = n;
  if (n === 1) tally.first[kind] = t;
  tally.last[kind] = t;
  if (sample !== undefined) (tally.samples[kind] ??= []).push(sample);
}

async function handle(msg: ToChild, start: SideStarter): Promise<void> {
  if (msg.type === 'go') {
    cpuAtGo = process.cpuUsage();
    let reported = '';
    ticker = setInterval(() => {
      const now = JSON.stringify(tally.counts);
      if (now !== reported) {
        reported = now;
        send({ type: 'progress', counts: tally.counts });
      }
    }, 25);
    running = await start(spec, { mark });
    send({ type: 'started' });
  } else if (msg.type === 'reset') {
    tally = { counts: {}, samples: {}, first: {}, last: {} };
  } else {
    await running?.stop();
    if (ticker) clearInterval(ticker);
    const cpu = process.cpuUsage(cpuAtGo);
    // Peer clients may keep sockets or timers alive after stop: leave once the result is written.
    const result: FromChild = { type: 'result', cpuMicros: cpu.user + cpu.system, ...tally };
    if (!process.send) process.exit(0);
    process.send(result, undefined, {}, () => process.exit(0));
  }
}

async function main(): Promise<void> {
  const start = await loadSide(spec.system);
  process.on('message', (msg: ToChild) => {
    void handle(msg, start).catch((err: unknown) => {
      send({ type: 'error', message: errorMessage(err) });
      process.exit(1);
    });
  });
  send({ type: 'loaded' });
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  send({ type: 'error', message: errorMessage(err) });
  process.exit(1);
});
