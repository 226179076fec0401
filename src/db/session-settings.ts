/**
 * Settings of the connections TaskQ opens itself (pools built from a DSN; a pool you pass in is
 * left as it is — set these on it for the same effect).
 *
 * `jit = off` everywhere: TaskQ's statements are short, but on a large `jobs` table the claim
 * statement's estimated cost passes `jit_above_cost`, and each execution would spend most of its time
 * compiling itself.
 */
export const TASKQ_SESSION_SETTINGS: Readonly<Record<string, string>> = Object.freeze({ jit: 'off' });

/**
 * Worker pools (dispatcher and heartbeat) also always plan for the actual arguments
 * (`force_custom_plan`): their statements take arrays (heartbeats, progress flushes, re-pends,
 * sweeps), and a generic plan cannot know their length. After five executions Postgres may switch
 * such a statement to a generic plan that joins its CTEs by nested loops, quadratic in the array's
 * length; planning every call costs far less than such a plan. Client connections keep the
 * default: the single-job enqueue statement is planned once and reused, and planning it on every
 * call would slow enqueues down markedly.
 */
export const WORKER_SESSION_SETTINGS: Readonly<Record<string, string>> = Object.freeze({
  ...TASKQ_SESSION_SETTINGS,
  plan_cache_mode: 'force_custom_plan',
});

/**
 * The worker's claim and settle connections run one statement each, always with its generic plan
 * (`force_generic_plan`): planning either statement costs more than executing it for a small batch.
 * Both generic plans are written to stay on the primary key and the dispatch indexes whatever the
 * batch size (the id list in `dispatch.sql`, the `status::text` guard in `settle.sql`), so they beat
 * custom plans for large batches and large tables too (bench/NOTES.md).
 */
export const GENERIC_PLAN_SESSION_SETTINGS: Readonly<Record<string, string>> = Object.freeze({
  ...TASKQ_SESSION_SETTINGS,
  plan_cache_mode: 'force_generic_plan',
});

/**
 * The claim and settle connections also plan with `enable_seqscan = off` and `enable_sort = off`. A
 * generic plan is made once, from the statistics of the moment:
 * - on an empty `jobs` table the outcome write was planned as a sequential scan of `jobs` joined by
 *   nested loop to the outcomes, and the lean claim's update of its locked rows as a sequential scan
 *   filtered by row address;
 * - on a backlog not analyzed yet (jobs enqueued just before the worker started), both claims
 *   read every pending job of the queue through a per-queue index and sorted them, instead of
 *   reading the dispatch index in order and stopping at the limit (the sort spilling to disk).
 * Each would cost the whole table or backlog per batch, until the next analyze re-made the plan
 * (EXPLAIN; test/backend/plan-shapes.test.ts). Every table the statements read has the index it needs, in
 * the order they need; the settings only stop the planner from betting on a table staying small.
 * The sorts that remain (the claimed rows, at most one batch) are planned all the same: a disabled
 * node type is only made to look expensive.
 */
export const PINNED_PLAN_SESSION_SETTINGS: Readonly<Record<string, string>> = Object.freeze({
  ...GENERIC_PLAN_SESSION_SETTINGS,
  enable_seqscan: 'off',
  enable_sort: 'off',
});
