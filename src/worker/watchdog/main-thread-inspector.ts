import type { Session } from 'node:inspector';

/** One frame of the main thread's JavaScript stack. */
export interface StackFrame {
  functionName: string;
  url: string;
  /** 1-based. */
  line: number;
  /** 1-based. */
  column: number;
}

interface PausedCallFrame {
  functionName: string;
  url?: string;
  location: { scriptId: string; lineNumber: number; columnNumber: number };
}

/**
 * The main thread seen from another thread through the inspector protocol
 * (`Session.connectToMainThread()`). The inspector reaches a main thread that is busy running
 * JavaScript, or waiting in `Atomics.wait`: V8 interrupts it to answer. That is how the loop-lag
 * thread takes the stack of a blocked main thread (`Debugger.pause`) and runs code on it
 * (`Runtime.evaluate`) although its event loop never turns. A main thread blocked inside a native
 * call (a synchronous child process, a synchronous read of a hung file system) answers only when
 * the call returns: every method here takes a timeout and reports that as null or false.
 */
export class MainThreadInspector {
  private session: Session | null = null;
  private readonly scripts = new Map<string, string>();
  private paused = false;

  /**
   * Connects, or returns false when this Node has no inspector (built without it) or a session
   * cannot be opened from this thread.
   */
  async connect(): Promise<boolean> {
    if (this.session) return true;
    try {
      const { Session } = await import('node:inspector');
      const session = new Session();
      session.connectToMainThread();
      // Call frames name their script by id; the urls come with the scriptParsed events that
      // Debugger.enable replays for every script already loaded.
      session.on('Debugger.scriptParsed', (m: { params: { scriptId: string; url: string } }) =>
        this.scripts.set(m.params.scriptId, m.params.url),
      );
      this.session = session;
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Pauses the main thread where it is and returns its stack, innermost frame first; the thread
   * stays paused until {@link resume} (or the process ends). Null when it did not pause within
   * `timeoutMs` (stuck in native code) or the inspector is unavailable.
   */
  async pause(timeoutMs: number): Promise<StackFrame[] | null> {
    if (!(await this.connect())) return null;
    const session = this.session!;
    const frames = new Promise<StackFrame[]>((resolve) => {
      session.once('Debugger.paused', (m: { params: { callFrames: PausedCallFrame[] } }) => {
        this.paused = true;
        resolve(m.params.callFrames.map((f) => this.frame(f)));
      });
    });
    const answered = await withTimeout(
      (async () => {
        await this.post('Debugger.enable');
        await this.post('Debugger.pause');
        return frames;
      })(),
      timeoutMs,
    );
    return answered ?? null;
  }

  /**
   * Lets a paused main thread run again and closes the session: closing it also disables the
   * debugger for it (an enabled debugger costs the main thread time), and needs no answer from a
   * main thread that never paused.
   */
  async resume(timeoutMs: number): Promise<void> {
    const session = this.session;
    if (!session) return;
    if (this.paused) await withTimeout(this.post('Debugger.resume'), timeoutMs);
    this.paused = false;
    this.session = null;
    session.disconnect();
  }

  /**
   * Runs `expression` on the main thread (paused or busy). Resolves true when it answered within
   * `timeoutMs` without throwing — for an expression that ends the process, it never answers.
   */
  async evaluate(expression: string, timeoutMs: number): Promise<boolean> {
    if (!(await this.connect())) return false;
    const result = await withTimeout(
      this.post('Runtime.evaluate', { expression }) as Promise<{ exceptionDetails?: unknown }>,
      timeoutMs,
    );
    return result !== undefined && result.exceptionDetails === undefined;
  }

  private frame(f: PausedCallFrame): StackFrame {
    return {
      functionName: f.functionName || '<anonymous>',
      url: this.scripts.get(f.location.scriptId) || f.url || '<unknown>',
      line: f.location.lineNumber + 1,
      column: f.location.columnNumber + 1,
    };
  }

  private post(method: string, params?: object): Promise<unknown> {
    const session = this.session!;
    return new Promise((resolve, reject) => {
      session.post(method, params ?? {}, (err: Error | null, result?: unknown) =>
        err ? reject(err) : resolve(result),
      );
    });
  }
}

/** Formats frames like V8 stack lines (`    at fn (url:line:column)`). */
export function formatStack(frames: readonly StackFrame[]): string {
  return frames.map((f) => `    at ${f.functionName} (${f.url}:${f.line}:${f.column})`).join('\n');
}

/**
 * Resolves with the promise's value, or undefined when it rejects or takes longer than `ms` (it is
 * then left to settle).
 */
async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise.catch(() => undefined),
      new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
