// The demo's actors: each shows one feature. Examples run from the repository, so they import the
// package source; in your code, import from 'taskq' instead.
import { z } from 'zod';

import { actor } from '../../src/index.js';
import { Snooze } from '../../src/retry/control-flow.js';

/** Every demo actor lives on this queue, so the demo's worker claims exactly these jobs. */
export const DEMO_QUEUE = 'demo';

/** A Zod payload schema: validated at enqueue (nothing is written on a bad payload) and at dispatch. */
export const greet = actor(
  {
    name: 'greet',
    queue: DEMO_QUEUE,
    payload: z.object({ name: z.string().min(1) }),
    result: z.string(),
  },
  async ({ name }) => `Hello, ${name}!`,
);

/** A result schema: the worker validates the return value, and `handle.wait()` returns it typed. */
export const add = actor(
  {
    name: 'add',
    queue: DEMO_QUEUE,
    payload: z.object({ a: z.number(), b: z.number() }),
    result: z.object({ sum: z.number() }),
  },
  async ({ a, b }) => ({ sum: a + b }),
);

/** Fails its first attempt, as a flaky upstream would; the retry policy runs it again 100 ms later. */
export const fetchRates = actor(
  {
    name: 'fetch_rates',
    queue: DEMO_QUEUE,
    payload: z.object({ currency: z.string().length(3) }),
    retry: { maxAttempts: 3, base: '100ms', jitter: 0 },
  },
  async ({ currency }, ctx) => {
    if (ctx.attempt === 1) throw new Error('upstream timed out (simulated)');
    return { currency, usd: currency === 'EUR' ? 1.08 : 1 };
  },
);

/**
 * Waits for something outside the job without spending attempts: while the report is not ready,
 * `Snooze` puts the job back to `scheduled` for the remaining time.
 */
export const exportReport = actor(
  {
    name: 'export_report',
    queue: DEMO_QUEUE,
    payload: z.object({ reportId: z.string(), readyAt: z.number() }),
  },
  async ({ reportId, readyAt }) => {
    const notReadyFor = readyAt - Date.now();
    if (notReadyFor > 0) throw new Snooze(notReadyFor);
    return `report ${reportId} exported`;
  },
);

/** Enqueued with `delay`: it is `scheduled` first and runs once the delay has passed. */
export const sendReminder = actor(
  {
    name: 'send_reminder',
    queue: DEMO_QUEUE,
    payload: z.object({ to: z.string().email() }),
  },
  async ({ to }) => `reminder sent to ${to}`,
);

/** A business refusal: retrying cannot help, so the error class is declared non-retryable. */
export class CardDeclined extends Error {
  override name = 'CardDeclined';
}

/** Fails for good on its first attempt (`nonRetryableErrors`): the job ends `failed`. */
export const chargeCard = actor(
  {
    name: 'charge_card',
    queue: DEMO_QUEUE,
    payload: z.object({ cents: z.number().int().positive() }),
    nonRetryableErrors: [CardDeclined],
  },
  async ({ cents }) => {
    throw new CardDeclined(`card declined for ${(cents / 100).toFixed(2)} (simulated)`);
  },
);

/** All the demo's actors, as `taskq worker --module examples/demo/actors.ts` would find them. */
export default [greet, add, fetchRates, exportReport, sendReminder, chargeCard];
