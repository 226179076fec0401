/**
 * Waiting in tests without bare sleeps: on a condition ({@link waitFor}), on the promise reactions a
 * step queued ({@link flushPromises}), or, where the claim is that something does not happen, for
 * an explicit window ({@link holdsFor}).
 */

/** Waits until `predicate` holds, polling briefly; fails with `what` after `timeoutMs`. */
export async function waitFor(
  predicate: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let delay = 2;
  for (;;) {
    if (await predicate()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 50);
  }
}

/**
 * Lets every promise reaction already queued run, and the reactions those queue in turn (it
 * resolves on the next macrotask turn, after the microtask queue is empty). After it, code driven
 * only by promises has done all it will do until a timer or I/O fires: a test checks what a step
 * did, or did not do, without waiting on the clock.
 */
export function flushPromises(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Checks that `predicate` keeps holding for `ms`, polling; fails with `what` as soon as it does not.
 * For claims of absence ("no second claim starts", "the resumed feed yields nothing"): the window
 * is how long the test looks, not a pause that lets something happen. Where the code is driven by
 * promises alone, prefer {@link flushPromises}.
 */
export async function holdsFor(
  predicate: () => boolean | Promise<boolean>,
  ms: number,
  what = 'condition',
): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    if (!(await predicate())) throw new Error(`${what} stopped holding within ${ms} ms`);
    const left = until - Date.now();
    if (left <= 0) return;
    await new Promise((r) => setTimeout(r, Math.min(left, 20)));
  }
}
