/**
 * Resolves after `ms`, or early when `signal` aborts or `wake` is called. Never rejects: loops check
 * their own stop state after waking.
 */
export function interruptibleSleep(
  ms: number,
  signal?: AbortSignal,
): { promise: Promise<void>; wake: () => void } {
  let wake!: () => void;
  const promise = new Promise<void>((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal?.addEventListener('abort', done, { once: true });
    wake = done;
  });
  wake ??= () => undefined;
  return { promise, wake };
}

/** Spreads a period by ±`fraction` so a fleet's loops do not tick in lockstep. */
export function jitter(ms: number, fraction = 0.1, random: () => number = Math.random): number {
  return Math.max(0, ms * (1 + fraction * (random() * 2 - 1)));
}

/** Rejects with `onTimeout()` when `promise` does not settle within `ms`. */
export async function withTimeout<T>(promise: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(onTimeout()), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
