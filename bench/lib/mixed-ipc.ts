/**
 * Messages between `bench/mixed-load.ts` and its worker processes (`bench/mixed-worker.ts`), and the
 * fleet that starts those processes in step and gathers their reports.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { sleep } from './common.js';

/** What a worker process is told at its start (JSON in `BENCH_MIXED_WORKER`). */
export interface MixedWorkerSpec {
  schema: string;
  concurrency: number;
  /** Retention of succeeded and failed jobs for a prune every minute; null: no prune (the defaults). */
  pruneRetentionMs: number | null;
}

/** Parent → worker process. */
export type MixedParentMessage = { type: 'go' } | { type: 'stop' };

/** A worker process's periodic report: what happened since its previous one, and its memory now. */
export interface MixedReport {
  type: 'report';
  /** Flattened [handler start (nowMs), enqueue → start ms, high priority 0/1] of first attempts. */
  starts: number[];
  /** Jobs whose handler returned. */
  done: number;
  /** Attempts whose handler threw. */
  thrown: number;
  /** Jobs that failed for good (the worker's error reporter). */
  failedForGood: number;
  rss: number;
  heapUsed: number;
  heapTotal: number;
}

/** Worker process → parent. */
export type MixedChildMessage =
  | { type: 'loaded'; pid: number }
  | { type: 'started' }
  | MixedReport
  | { type: 'stopped'; warnings: number }
  | { type: 'error'; message: string };

const SCRIPT = fileURLToPath(new URL('../mixed-worker.ts', import.meta.url));

interface Member {
  proc: ChildProcess;
  stderr: string;
  exited: boolean;
  stopped: boolean;
  error: string | null;
  loaded: boolean;
  started: boolean;
  /** Latest memory reading. */
  rss: number;
  heapUsed: number;
  heapTotal: number;
  /** Lowest heap used reported since the last {@link MixedFleet.memory} call (Infinity: none yet). */
  heapFloor: number;
  warnings: number;
}

/** The worker processes of one mixed-load run. */
export class MixedFleet {
  private constructor(
    private readonly members: Member[],
    private readonly onReport: (index: number, report: MixedReport) => void,
  ) {}

  /**
   * Forks `processes` worker processes, waits until all have loaded TaskQ, tells them to start
   * together and resolves once all have started. `onReport` receives every report as it arrives.
   */
  static async start(
    spec: MixedWorkerSpec,
    processes: number,
    onReport: (index: number, report: MixedReport) => void,
    timeoutMs = 60_000,
  ): Promise<MixedFleet> {
    const members: Member[] = [];
    const fleet = new MixedFleet(members, onReport);
    for (let i = 0; i < processes; i++) {
      const proc = fork(SCRIPT, [], {
        execArgv: ['--import', 'tsx'],
        env: { ...process.env, BENCH_MIXED_WORKER: JSON.stringify(spec) },
        stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      });
      const m: Member = {
        proc,
        stderr: '',
        exited: false,
        stopped: false,
        error: null,
        loaded: false,
        started: false,
        rss: 0,
        heapUsed: 0,
        heapTotal: 0,
        heapFloor: Infinity,
        warnings: 0,
      };
      proc.stderr?.on('data', (d: Buffer) => {
        m.stderr = (m.stderr + d.toString()).slice(-4000);
      });
      proc.on('message', (msg: MixedChildMessage) => {
        if (msg.type === 'loaded') m.loaded = true;
        else if (msg.type === 'started') m.started = true;
        else if (msg.type === 'report') {
          m.rss = msg.rss;
          m.heapUsed = msg.heapUsed;
          m.heapTotal = msg.heapTotal;
          m.heapFloor = Math.min(m.heapFloor, msg.heapUsed);
          fleet.onReport(i, msg);
        } else if (msg.type === 'stopped') {
          m.stopped = true;
          m.warnings = msg.warnings;
        } else if (msg.type === 'error') m.error = msg.message;
      });
      proc.on('exit', () => {
        m.exited = true;
      });
      members.push(m);
    }
    try {
      await fleet.waitFor((m) => m.loaded, timeoutMs, 'worker processes did not load');
      for (const m of members) m.proc.send({ type: 'go' } satisfies MixedParentMessage);
      await fleet.waitFor((m) => m.started, timeoutMs, 'worker processes did not start');
    } catch (err) {
      fleet.kill();
      throw err;
    }
    return fleet;
  }

  private async waitFor(ok: (m: Member) => boolean, timeoutMs: number, what: string): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.members.every(ok)) {
      this.check();
      if (Date.now() > deadline) throw new Error(`${what} within ${timeoutMs} ms`);
      await sleep(10);
    }
  }

  /** Throws when a worker process reported an error or exited before it was told to stop. */
  check(): void {
    for (const m of this.members) {
      if (m.error !== null) throw new Error(`worker process failed: ${m.error} ${m.stderr.slice(-600)}`);
      if (m.exited && !m.stopped) throw new Error(`worker process exited: ${m.stderr.slice(-600)}`);
    }
  }

  /** Pids of the worker processes. */
  get pids(): number[] {
    return this.members.flatMap((m) => (m.proc.pid === undefined ? [] : [m.proc.pid]));
  }

  /**
   * Each process's memory (bytes), in process order: its latest RSS and heap total, and the lowest
   * heap used it reported since the previous call. Heap used read at one moment is anywhere on the
   * sawtooth between two collections; its floor over an interval (reports come every 250 ms)
   * tracks what the collections leave, which is what grows when something leaks.
   */
  memory(): { rss: number; heapUsed: number; heapTotal: number }[] {
    return this.members.map((m) => {
      const heapUsed = Number.isFinite(m.heapFloor) ? m.heapFloor : m.heapUsed;
      m.heapFloor = Infinity;
      return { rss: m.rss, heapUsed, heapTotal: m.heapTotal };
    });
  }

  /** Warnings the processes' workers logged (counted by their loggers), once stopped. */
  get warnings(): number {
    return this.members.reduce((a, m) => a + m.warnings, 0);
  }

  /** Stops every worker gracefully (their last reports arrive before this resolves). */
  async stop(timeoutMs = 30_000): Promise<void> {
    for (const m of this.members) if (!m.exited) m.proc.send({ type: 'stop' } satisfies MixedParentMessage);
    const deadline = Date.now() + timeoutMs;
    while (this.members.some((m) => !m.exited) && Date.now() < deadline) await sleep(10);
    const stuck = this.members.some((m) => !m.exited);
    this.kill();
    if (stuck) throw new Error(`worker processes did not stop within ${timeoutMs} ms`);
    const bad = this.members.find((m) => !m.stopped || m.error !== null);
    if (bad)
      throw new Error(`worker process did not stop cleanly: ${bad.error ?? ''} ${bad.stderr.slice(-600)}`);
  }

  /** Ends every process still running (by its own pid). */
  kill(): void {
    for (const m of this.members) if (!m.exited) m.proc.kill('SIGKILL');
  }
}
