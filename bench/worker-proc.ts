/**
 * A benchmark worker process: starts one system's worker (spec in BENCH_WORKER_SPEC) when the
 * harness says `go`, counts handler starts, optionally records enqueue → start latencies and RSS
 * samples, and reports over the IPC channel. Started by `bench/lib/fleet.ts` as
 * `node --import tsx bench/worker-proc.ts`, under the Node 22 binary of bench/node22/ for the
 * systems that need it (`WorkerSpec.execPath`; systems/node22.ts).
 */
import { nowMs, errorMessage, type BenchPayload } from './lib/common.js';
import type { ChildMessage, ParentMessage } from './lib/fleet.js';
import { isKnownSystem, loadWorkerStarter } from './systems/index.js';
import type { RunningWorker, WorkerSpec } from './systems/types.js';

function send(msg: ChildMessage): void {
  process.send?.(msg);
}

/**
 * Sends the last message and exits once the IPC channel has written it: a result carrying tens of
 * thousands of latency samples (~1 MB of JSON) can still be queued when a fixed delay ends.
 */
function sendAndExit(msg: ChildMessage, code: number): void {
  if (!process.send) process.exit(code);
  process.send(msg, undefined, {}, () => process.exit(code));
}

const spec = JSON.parse(process.env.BENCH_WORKER_SPEC ?? '{}') as WorkerSpec;

let count = 0;
let failed = 0;
const failures: string[] = [];
let firstStart = 0;
let lastStart = 0;
let recordLatency = false;
let recordStarts = false;
const starts: number[] = [];
const latencies: number[] = [];
const rss: [number, number, number][] = [];
let running: RunningWorker | null = null;
let timers: NodeJS.Timeout[] = [];
let cpuAtGo: NodeJS.CpuUsage | null = null;

async function main(): Promise<void> {
  if (!isKnownSystem(spec.system)) throw new Error(`unknown system ${spec.system}`);
  const start = await loadWorkerStarter(spec.system);
  process.on('message', (raw: ParentMessage) => {
    void handle(raw, start).catch((err: unknown) => {
      send({ type: 'error', message: errorMessage(err) });
      process.exit(1);
    });
  });
  send({ type: 'loaded', pid: process.pid });
}

async function handle(
  msg: ParentMessage,
  start: Awaited<ReturnType<typeof loadWorkerStarter>>,
): Promise<void> {
  if (msg.type === 'go') {
    recordLatency = msg.recordLatency;
    recordStarts = msg.recordStarts;
    cpuAtGo = process.cpuUsage();
    const t0 = nowMs();
    if (msg.sampleRss) {
      rss.push([0, process.memoryUsage.rss(), 0]);
      timers.push(setInterval(() => rss.push([nowMs() - t0, process.memoryUsage.rss(), count]), 200));
    }
    let reported = -1;
    timers.push(
      setInterval(() => {
        if (count !== reported) {
          reported = count;
          send({ type: 'progress', count, failed });
        }
      }, 25),
    );
    running = await start(spec, {
      onJob(payload: BenchPayload) {
        const t = nowMs();
        if (count === 0) firstStart = t;
        lastStart = t;
        count++;
        if (recordStarts) starts.push(t);
        if (recordLatency && payload.t !== undefined) latencies.push(payload.t, t - payload.t);
      },
      onFailed(message: string) {
        failed++;
        if (failures.length < 5) failures.push(message.split('\n')[0] ?? message);
      },
    });
    send({ type: 'started' });
  } else if (msg.type === 'stop') {
    await running?.stop();
    for (const t of timers) clearInterval(t);
    timers = [];
    const cpu = process.cpuUsage(cpuAtGo ?? undefined);
    // Some clients keep timers or sockets alive after stop: leave explicitly, once the parent has
    // the result.
    sendAndExit(
      {
        type: 'result',
        count,
        failed,
        failures,
        firstStart,
        lastStart,
        latencies,
        rss,
        peakRss: Math.max(0, ...rss.map((r) => r[1])),
        cpuMicros: cpu.user + cpu.system,
        starts,
      },
      0,
    );
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  sendAndExit({ type: 'error', message: errorMessage(err) }, 1);
});
