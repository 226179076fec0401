/**
 * Worker processes of one run. Each system's workers run in processes of their own
 * (`bench/worker-proc.ts`), started together: the harness waits until every process has loaded its
 * modules, then tells all of them to start at once, so multi-process runs start in step.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import type { WorkerSpec } from '../systems/types.js';
import { sleep } from './common.js';

export type ParentMessage =
  { type: 'go'; recordLatency: boolean; sampleRss: boolean; recordStarts: boolean } | { type: 'stop' };

export interface WorkerResult {
  count: number;
  failed: number;
  failures: string[];
  /** nowMs() of the first and last handler start. */
  firstStart: number;
  lastStart: number;
  /** Pairs (enqueue time, enqueue → handler start ms), flattened (latency runs only). */
  latencies: number[];
  /** [ms since go, rss bytes, jobs started] samples (memory runs only). */
  rss: [number, number, number][];
  peakRss: number;
  /** CPU time (user + system, µs) the process used from `go` to `stop`: its start-up is not in it. */
  cpuMicros: number;
  /** nowMs() of every handler start, in order (when the fleet records starts; else empty). */
  starts: number[];
}

export type ChildMessage =
  | { type: 'loaded'; pid: number }
  | { type: 'started' }
  | { type: 'progress'; count: number; failed: number }
  | ({ type: 'result' } & WorkerResult)
  | { type: 'error'; message: string };

export interface FleetOptions {
  recordLatency?: boolean;
  sampleRss?: boolean;
  /** Record the time of every handler start (`WorkerResult.starts`). */
  recordStarts?: boolean;
  /** Write a V8 CPU profile of each worker process to this directory. */
  cpuProfDir?: string;
  /** Give up starting after this long. */
  startTimeoutMs?: number;
}

const SCRIPT = fileURLToPath(new URL('../worker-proc.ts', import.meta.url));

interface Member {
  proc: ChildProcess;
  count: number;
  failed: number;
  stderr: string;
  exited: boolean;
  result: WorkerResult | null;
  error: string | null;
}

export class Fleet {
  private constructor(private readonly members: Member[]) {}

  /** Starts `processes` worker processes for `spec` and resolves once every worker has started. */
  static async start(spec: WorkerSpec, options: FleetOptions = {}): Promise<Fleet> {
    const execArgv = ['--import', 'tsx'];
    if (options.cpuProfDir) execArgv.push('--cpu-prof', `--cpu-prof-dir=${options.cpuProfDir}`);
    const members: Member[] = [];
    const waiters: { loaded: Promise<void>; started: Promise<void> }[] = [];
    for (let i = 0; i < spec.processes; i++) {
      const proc = fork(SCRIPT, [], {
        // A system on another Node release (spec.execPath) runs the same script under that binary;
        // the two V8 serialisers need not agree, so its messages go as JSON (plain data either way).
        ...(spec.execPath ? { execPath: spec.execPath } : {}),
        execArgv,
        env: { ...process.env, BENCH_WORKER_SPEC: JSON.stringify(spec) },
        stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
        serialization: spec.execPath ? 'json' : 'advanced',
      });
      const m: Member = { proc, count: 0, failed: 0, stderr: '', exited: false, result: null, error: null };
      proc.stderr?.on('data', (d: Buffer) => {
        m.stderr = (m.stderr + d.toString()).slice(-4000);
      });
      let onLoaded!: () => void;
      let onStarted!: () => void;
      let onFail!: (e: Error) => void;
      const failed = new Promise<never>((_, rej) => (onFail = rej));
      failed.catch(() => undefined);
      const loaded = Promise.race([new Promise<void>((r) => (onLoaded = r)), failed]);
      const started = Promise.race([new Promise<void>((r) => (onStarted = r)), failed]);
      loaded.catch(() => undefined);
      started.catch(() => undefined);
      proc.on('message', (msg: ChildMessage) => {
        if (msg.type === 'loaded') onLoaded();
        else if (msg.type === 'started') onStarted();
        else if (msg.type === 'progress') {
          m.count = msg.count;
          m.failed = msg.failed;
        } else if (msg.type === 'result') {
          m.result = msg;
          m.count = msg.count;
        } else if (msg.type === 'error') {
          m.error = msg.message;
          onFail(new Error(`worker process failed: ${msg.message}`));
        }
      });
      proc.on('exit', (code, signal) => {
        m.exited = true;
        if (!m.result)
          onFail(
            new Error(
              `worker process exited (code ${code}, signal ${signal}) ${m.error ?? ''}: ${m.stderr.slice(-600)}`,
            ),
          );
      });
      members.push(m);
      waiters.push({ loaded, started });
    }
    const fleet = new Fleet(members);
    const timeout = options.startTimeoutMs ?? 60_000;
    try {
      await withTimeout(Promise.all(waiters.map((w) => w.loaded)), timeout, 'worker processes did not load');
      for (const m of members)
        m.proc.send({
          type: 'go',
          recordLatency: options.recordLatency ?? false,
          sampleRss: options.sampleRss ?? false,
          recordStarts: options.recordStarts ?? false,
        } satisfies ParentMessage);
      await withTimeout(
        Promise.all(waiters.map((w) => w.started)),
        timeout,
        'worker processes did not start',
      );
    } catch (err) {
      fleet.kill();
      throw err;
    }
    return fleet;
  }

  /** The worker processes' pids (for CPU accounting). */
  get pids(): number[] {
    return this.members.flatMap((m) => (m.proc.pid === undefined ? [] : [m.proc.pid]));
  }

  /** Handler starts reported so far (sum over processes; reports lag by ≤ 25 ms). */
  get count(): number {
    return this.members.reduce((a, m) => a + m.count, 0);
  }

  get failed(): number {
    return this.members.reduce((a, m) => a + m.failed, 0);
  }

  /** Resolves true once `n` handler starts were reported, false at the deadline. */
  async waitForCount(n: number, deadline: number): Promise<boolean> {
    while (this.count < n) {
      if (Date.now() >= deadline) return false;
      const dead = this.members.find((m) => m.exited && !m.result);
      if (dead) throw new Error(`worker process died: ${dead.error ?? ''} ${dead.stderr.slice(-600)}`);
      await sleep(5);
    }
    return true;
  }

  /** Stops every worker gracefully and collects their results. */
  async stop(timeoutMs = 30_000): Promise<WorkerResult[]> {
    for (const m of this.members) if (!m.exited) m.proc.send({ type: 'stop' } satisfies ParentMessage);
    const deadline = Date.now() + timeoutMs;
    while (this.members.some((m) => !m.exited) && Date.now() < deadline) await sleep(10);
    const stuck = this.members.filter((m) => !m.exited);
    this.kill();
    const missing = this.members.filter((m) => !m.result);
    if (missing.length > 0) {
      const m = missing[0]!;
      throw new Error(
        `${missing.length} worker process(es) gave no result${stuck.length ? ' (stop timed out)' : ''}: ${m.error ?? ''} ${m.stderr.slice(-600)}`,
      );
    }
    return this.members.map((m) => m.result!);
  }

  /** Ends every process still running (by its own pid). */
  kill(): void {
    for (const m of this.members) if (!m.exited) m.proc.kill('SIGKILL');
  }

  /** The stderr tails (for reports of failed runs). */
  stderrTail(): string {
    return this.members.map((m) => m.stderr.slice(-300)).join(' | ');
  }
}

async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, rej) => {
    timer = setTimeout(() => rej(new Error(`${what} within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, t]);
  } finally {
    clearTimeout(timer);
  }
}
