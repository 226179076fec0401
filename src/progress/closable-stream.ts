/** How a stream ends early. */
export interface ClosableStreamOptions {
  /** The caller's signal: aborting it ends the iteration quietly. */
  signal?: AbortSignal | undefined;
  /** Aborted when the owning client closes: the iteration then fails with `closedError()`. */
  closed?: AbortSignal | undefined;
  closedError: () => Error;
}

/**
 * Wraps a stream body (an async generator that returns true once it delivered its last event) so
 * that `return()` — what `break` calls — releases everything at once, even while a `next()` is
 * waiting: the body's stop signal wakes it, it returns, and its `finally` frees its subscriptions.
 */
export function closableStream<T>(
  body: (stop: AbortSignal) => AsyncGenerator<T, boolean>,
  options: ClosableStreamOptions,
): AsyncIterableIterator<T> {
  const ctl = new AbortController();
  let returning = false;
  async function* run(): AsyncGenerator<T> {
    const onAbort = (): void => ctl.abort();
    if (options.signal?.aborted || options.closed?.aborted) ctl.abort();
    options.signal?.addEventListener('abort', onAbort);
    options.closed?.addEventListener('abort', onAbort);
    let finished: boolean;
    try {
      finished = yield* body(ctl.signal);
    } finally {
      options.signal?.removeEventListener('abort', onAbort);
      options.closed?.removeEventListener('abort', onAbort);
    }
    if (!finished && !returning && options.closed?.aborted && !options.signal?.aborted)
      throw options.closedError();
  }
  const gen = run();
  return {
    next: () => gen.next(),
    return: (value?: unknown) => {
      returning = true;
      ctl.abort();
      return gen.return(value as never);
    },
    throw: (err?: unknown) => {
      returning = true;
      ctl.abort();
      return gen.throw(err);
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}
