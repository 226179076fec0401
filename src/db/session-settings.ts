/**
 * Settings of the connections TaskQ opens itself (pools built from a DSN; a pool you pass in is
 * left as it is — set these on it for the same effect).
 *
 * `jit = off` everywhere: TaskQ's statements are short, but on a large `jobs` table the claim
 * statement's estimated cost passes `jit_above_cost` and each execution would spend tens of
 * milliseconds compiling itself (measured: 56 of 58 ms at 1M rows).
 */
export const TASKQ_SESSION_SETTINGS: Readonly<Record<string, string>> = Object.freeze({ jit: 'off' });

/**
 * Worker connections also always plan for the actual arguments (`force_custom_plan`): the claim and
 * settle statements take arrays, and a generic plan cannot know their length. After five
 * executions Postgres switched the settle statement to a generic plan that joined its CTEs by
 * nested loops: 187 ms instead of 18 ms at 400 items; a generic claim plan took 70 ms for 10 jobs.
 * A custom plan costs about 1 ms of planning per batch. Client connections keep the default: the
 * single-job enqueue statement is planned once and reused (twice the enqueue rate).
 */
export const WORKER_SESSION_SETTINGS: Readonly<Record<string, string>> = Object.freeze({
  ...TASKQ_SESSION_SETTINGS,
  plan_cache_mode: 'force_custom_plan',
});

/**
 * The worker's claim connection runs only the dispatch statement, and always with its generic plan
 * (`force_generic_plan`): planning that statement costs about 1 ms, more than executing it for a
 * small batch. Its generic plan is written to stay on indexes whatever the batch size (see the id
 * list in `dispatch.sql`); measured at 10k and 1M rows, 1–100 jobs per claim, it is faster than
 * the custom plans (0.7 vs 1.8 ms for one job, 4.9 vs 8.1 ms for 100 at 1M rows).
 */
export const CLAIM_SESSION_SETTINGS: Readonly<Record<string, string>> = Object.freeze({
  ...TASKQ_SESSION_SETTINGS,
  plan_cache_mode: 'force_generic_plan',
});
