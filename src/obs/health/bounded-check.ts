import { redactSecrets } from '../../errors/redact-secrets.js';

/**
 * A readiness check: resolves when the thing it checks is fine. It fails when it throws, rejects,
 * resolves to `false`, or outlasts its timeout; `signal` is aborted when the timeout passes, for
 * checks that can stop early.
 */
export type ReadinessCheck = (signal: AbortSignal) => unknown;

/** One check's result, as `/ready` reports it. */
export interface CheckResult {
  /** The check passed within its timeout. */
  ok: boolean;
  /** How long this probe waited for it, in milliseconds. */
  durationMs: number;
  /** Why it failed: the error's class and message (bounded, secrets masked), `returned false`, or the timeout. */
  error?: string;
}

const TIMED_OUT = Symbol('timed out');

/** Longest error text a probe response carries: enough to tell causes apart, short enough for a probe log. */
const MAX_ERROR_CHARS = 200;

/**
 * Runs one readiness check, bounded by a timeout, at most once at a time: a probe that arrives while
 * the previous run is still out waits for that run (within its own timeout) instead of starting
 * another. A check that hangs therefore costs one pending call, however often it is probed.
 */
export class BoundedCheck {
  private running: Promise<string | undefined> | null = null;
  private controller: AbortController | null = null;

  constructor(
    /** The check's name in `/ready`. */
    readonly name: string,
    private readonly check: ReadinessCheck,
  ) {}

  /** Runs the check (or joins the run in flight) and reports it within `timeoutMs`. */
  async run(timeoutMs: number): Promise<CheckResult> {
    const t0 = performance.now();
    const run = this.running ?? this.start();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<typeof TIMED_OUT>((resolve) => {
      timer = setTimeout(() => resolve(TIMED_OUT), timeoutMs);
    });
    const outcome = await Promise.race([run, timeout]);
    clearTimeout(timer);
    const durationMs = Math.round(performance.now() - t0);
    if (outcome === TIMED_OUT) {
      const error = `timed out after ${timeoutMs}ms`;
      // The run keeps its place (the next probe joins it) but is told to give up if it can.
      this.controller?.abort(new Error(error));
      return { ok: false, durationMs, error };
    }
    return outcome === undefined ? { ok: true, durationMs } : { ok: false, durationMs, error: outcome };
  }

  private start(): Promise<string | undefined> {
    const controller = new AbortController();
    this.controller = controller;
    const run = (async (): Promise<string | undefined> => {
      try {
        const out = await this.check(controller.signal);
        return out === false ? 'returned false' : undefined;
      } catch (err) {
        return describeFailure(err);
      }
    })().finally(() => {
      if (this.running === run) {
        this.running = null;
        this.controller = null;
      }
    });
    this.running = run;
    return run;
  }
}

function describeFailure(err: unknown): string {
  const text =
    err instanceof Error
      ? `${err.name}: ${err.message}`
      : `thrown: ${typeof err === 'string' ? err : String(err)}`;
  const clean = redactSecrets(text.replace(/\s+/g, ' '));
  return clean.length > MAX_ERROR_CHARS ? `${clean.slice(0, MAX_ERROR_CHARS - 1)}…` : clean;
}
