/**
 * The harness's handle on one worker process of the features workload (`proc.ts`): starts it,
 * waits until it has loaded its modules before saying `go` (so module loading is never timed),
 * follows its event counts and collects its tally at the stop.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { sleep } from '../../lib/common.js';
import type { FeatureSpec, FeatureTally, FromChild, ToChild } from './protocol.js';

const SCRIPT = fileURLToPath(new URL('./proc.ts', import.meta.url));

/** The tally of a stopped worker process, with the CPU it used from `go` to `stop`. */
export type FeatureResult = FeatureTally & { cpuMicros: number };

export class FeatureProcess {
  private counts: Record<string, number> = {};
  private stderr = '';
  private exited = false;
  private result: FeatureResult | null = null;
  private error: string | null = null;
  private readonly waiters = new Map<FromChild['type'], () => void>();

  private constructor(private readonly proc: ChildProcess) {
    proc.stderr?.on('data', (d: Buffer) => {
      this.stderr = (this.stderr + d.toString()).slice(-4000);
    });
    proc.on('message', (msg: FromChild) => {
      if (msg.type === 'progress') this.counts = msg.counts;
      else if (msg.type === 'result') {
        this.result = msg;
        this.counts = msg.counts;
      } else if (msg.type === 'error') this.error = msg.message;
      this.waiters.get(msg.type)?.();
    });
    proc.on('exit', () => {
      this.exited = true;
    });
  }

  /** Forks the process and resolves once it has loaded its side's modules (nothing started yet). */
  static async load(spec: FeatureSpec, timeoutMs = 60_000): Promise<FeatureProcess> {
    const proc = fork(SCRIPT, [], {
      execArgv: ['--import', 'tsx'],
      env: { ...process.env, BENCH_FEATURE_SPEC: JSON.stringify(spec) },
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      serialization: 'advanced',
    });
    const p = new FeatureProcess(proc);
    try {
      await p.until('loaded', timeoutMs);
    } catch (err) {
      p.kill();
      throw err;
    }
    return p;
  }

  /** Says `go` and resolves once the worker has started. */
  async go(timeoutMs = 60_000): Promise<void> {
    this.send({ type: 'go' });
    await this.until('started', timeoutMs);
  }

  /** Forgets the events counted so far (after a warm-up). */
  reset(): void {
    this.send({ type: 'reset' });
    this.counts = {};
  }

  /** Events of `kind` reported so far (reports lag by ≤ 25 ms). */
  count(kind: string): number {
    return this.counts[kind] ?? 0;
  }

  /** Resolves true once `n` events of `kind` were reported, false at `deadline` (Date.now()). */
  async waitFor(kind: string, n: number, deadline: number): Promise<boolean> {
    while (this.count(kind) < n) {
      if (this.exited || this.error) throw new Error(`worker process died: ${this.why()}`);
      if (Date.now() >= deadline) return false;
      await sleep(5);
    }
    return true;
  }

  /** Stops the worker gracefully and returns its tally. */
  async stop(timeoutMs = 30_000): Promise<FeatureResult> {
    if (!this.exited) this.send({ type: 'stop' });
    const deadline = Date.now() + timeoutMs;
    while (!this.exited && !this.result && Date.now() < deadline) await sleep(10);
    this.kill();
    if (!this.result) throw new Error(`worker process gave no result: ${this.why()}`);
    return this.result;
  }

  /** The last lines the worker process wrote to stderr (for the report of a failed measurement). */
  stderrTail(chars = 300): string {
    return this.stderr.slice(-chars).replace(/\s+/g, ' ').trim();
  }

  /** Ends the process if it still runs (by its own pid). */
  kill(): void {
    if (!this.exited) this.proc.kill('SIGKILL');
  }

  private send(msg: ToChild): void {
    this.proc.send(msg);
  }

  private why(): string {
    return `${this.error ?? ''} ${this.stderr.slice(-600)}`.trim();
  }

  private async until(type: FromChild['type'], timeoutMs: number): Promise<void> {
    const reached = new Promise<void>((resolve) => this.waiters.set(type, resolve));
    const deadline = Date.now() + timeoutMs;
    let done = false;
    void reached.then(() => (done = true));
    while (!done) {
      if (this.error || this.exited) throw new Error(`worker process failed: ${this.why()}`);
      if (Date.now() >= deadline) throw new Error(`worker process: no '${type}' within ${timeoutMs} ms`);
      await sleep(5);
    }
  }
}
