/**
 * An abort flag whose `AbortSignal` exists only once someone asks for it. Creating an
 * `AbortController` is costly in Node (its signal is an EventTarget), a cost the worker paid
 * for every job although most handlers never look at the signal and most jobs are never aborted.
 * `aborted` and `reason` are plain fields; `signal` creates the controller on first use, already
 * aborted (with the same reason) if the abort came first.
 */
export class LazyAbort {
  private controller: AbortController | null = null;
  private abortedFlag = false;
  private abortReason: unknown = undefined;

  /** True once {@link abort} was called. */
  get aborted(): boolean {
    return this.abortedFlag;
  }

  /** The reason given to {@link abort} (undefined before). */
  get reason(): unknown {
    return this.abortReason;
  }

  /** A standard signal that follows this flag (created on first access). */
  get signal(): AbortSignal {
    if (this.controller === null) {
      this.controller = new AbortController();
      if (this.abortedFlag) this.controller.abort(this.abortReason);
    }
    return this.controller.signal;
  }

  /** Aborts once; later calls are ignored, like `AbortController.abort`. */
  abort(reason: unknown): void {
    if (this.abortedFlag) return;
    this.abortedFlag = true;
    this.abortReason = reason;
    this.controller?.abort(reason);
  }
}
