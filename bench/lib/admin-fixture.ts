// The admin-pages bench's data: a migrated schema holding N jobs of a production-like shape, written
// by INSERT … SELECT generate_series (no round trip per row), plus the sample of ids, keys and tags
// the requests use.
//
// Shape (a hash of the row number decides, so every run writes the same table): live jobs only
// among the newest 5 % (a worker reaches what was enqueued first): 1.5 % of all jobs pending, 1 %
// scheduled, 0.1 % running; of the rest, 4 % failed, 0.5 % cancelled, 0.3 % crashed, 0.1 %
// abandoned, the others succeeded. Twelve actors over six queues, uneven (the first queue gets about
// a third of the jobs); 5 % at priority 10; created over the last 30 days in row order (UUIDv7-shaped ids of the
// same time, as the library writes), scheduled jobs due within the next day. 30 % carry tags
// (`nightly` on 20 %, `tenant-<k>` over 50 tenants, `vip` on 0.01 %), 10 % an idempotency key. The
// last 10,000 jobs are children of five batches with rows. Every tenth terminal job has one attempt
// row and two events. Three workers are alive, serving every queue.
import type { PgDriver } from '../../src/db/pg-driver.js';
import { Migrator } from '../../src/migrations/migrator.js';

/** What the bench's requests pick from. */
export interface Fixture {
  queues: string[];
  actors: string[];
  tags: string[];
  rareTag: string;
  /** A sample of job ids over the whole table. */
  jobIds: string[];
  /** Jobs with attempts and events. */
  historyIds: string[];
  /** Pending jobs (their page runs explain). */
  pendingIds: string[];
  /** Idempotency keys of the default scope. */
  keys: string[];
  batchIds: string[];
  /** Each order's second-page cursor (filled in by the bench through the API). */
  cursors: Record<'scheduled_at_asc' | 'created_at_desc' | 'finished_at_desc', string>;
}

export const QUEUES = ['default', 'email', 'billing', 'reports', 'media', 'webhooks'];
const ACTORS = QUEUES.flatMap((q) => [`${q}_send`, `${q}_sync`]);
const CHUNK = 200_000;
/** Bumped whenever the data's shape changes, so that `--keep` rebuilds an older schema. */
const SHAPE = 2;
const BATCH_CHILDREN = 2_000;
const BATCHES = 5;

/**
 * Creates (or with `keep`, reuses when complete) schema `schema` holding `jobs` jobs, VACUUM
 * ANALYZEd, and returns the sample. Progress lines go to `log`.
 */
export async function fillAdminSchema(
  driver: PgDriver,
  schema: string,
  jobs: number,
  keep: boolean,
  log: (line: string) => void,
): Promise<Fixture> {
  const S = `"${schema}"`;
  const sql = async <R = Record<string, unknown>>(text: string, values: unknown[] = []) =>
    (await driver.query(text.replaceAll('$S', S), values)).rows as R[];
  const done = await sql<{ n: string | null }>(`SELECT to_regclass($1)::text AS n`, [
    `${S}.bench_admin_done`,
  ]);
  const reusable =
    keep &&
    done[0]?.n != null &&
    (await sql(`SELECT 1 FROM $S.bench_admin_done WHERE shape = $1`, [SHAPE])).length === 1;
  if (!reusable) {
    await sql(`DROP SCHEMA IF EXISTS $S CASCADE`);
    await new Migrator(driver, { schema }).up();
    await writeJobs(sql, jobs, log);
    await sql(`CREATE TABLE $S.bench_admin_done (jobs integer NOT NULL, shape integer NOT NULL)`);
    await sql(`INSERT INTO $S.bench_admin_done VALUES ($1, $2)`, [jobs, SHAPE]);
  } else {
    log(`reusing ${schema}`);
    // Migrations added since the schema was filled (indexes over the existing rows).
    await new Migrator(driver, { schema }).up();
  }
  // Workers heartbeat while the UI is used; refresh them so they count as alive.
  await sql(`UPDATE $S.workers SET last_seen_at = clock_timestamp()`);

  const col = async (text: string) => (await sql<{ v: string }>(text)).map((r) => r.v);
  return {
    queues: QUEUES,
    actors: ACTORS,
    tags: ['nightly', 'tenant-7'],
    rareTag: 'vip',
    jobIds: await col(
      `SELECT id::text AS v FROM $S.jobs TABLESAMPLE BERNOULLI (1) REPEATABLE (42) LIMIT 1000`,
    ),
    historyIds: await col(
      `SELECT DISTINCT job_id::text AS v FROM $S.job_attempts TABLESAMPLE BERNOULLI (1) REPEATABLE (42) LIMIT 500`,
    ),
    pendingIds: await col(`SELECT id::text AS v FROM $S.jobs WHERE status = 'pending' LIMIT 500`),
    keys: await col(
      `SELECT idempotency_key AS v FROM $S.jobs TABLESAMPLE BERNOULLI (1) REPEATABLE (42)
       WHERE idempotency_key IS NOT NULL LIMIT 500`,
    ),
    batchIds: await col(`SELECT id::text AS v FROM $S.batches`),
    cursors: { scheduled_at_asc: '', created_at_desc: '', finished_at_desc: '' },
  };
}

type Sql = <R = Record<string, unknown>>(text: string, values?: unknown[]) => Promise<R[]>;

async function writeJobs(sql: Sql, jobs: number, log: (line: string) => void): Promise<void> {
  await sql(
    `INSERT INTO $S.workers (id, hostname, pid, queues, max_concurrency)
     SELECT gen_random_uuid(), 'bench-' || k, 1000 + k, $1::text[], 16 FROM generate_series(1, 3) k`,
    [QUEUES],
  );
  await sql(`INSERT INTO $S.queues (name) SELECT unnest($1::text[])`, [QUEUES]);
  const firstBatchChild = Math.max(1, jobs - BATCHES * BATCH_CHILDREN + 1);
  await sql(
    `INSERT INTO $S.batches (id, queue, expected_size, sealed, created_at)
     SELECT gen_random_uuid(), 'default', 0, true, clock_timestamp() - interval '1 day' * k
     FROM generate_series(1, $1) k`,
    [BATCHES],
  );
  const batchIds = (await sql<{ id: string }>(`SELECT id::text FROM $S.batches ORDER BY created_at`)).map(
    (r) => r.id,
  );
  for (let from = 1; from <= jobs; from += CHUNK) {
    const to = Math.min(jobs, from + CHUNK - 1);
    const t0 = performance.now();
    await sql(INSERT_JOBS, [from, to, jobs, ACTORS, QUEUES, firstBatchChild, BATCH_CHILDREN, batchIds]);
    log(
      `jobs ${from.toLocaleString('en')}–${to.toLocaleString('en')} in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
  }
  await sql(
    `UPDATE $S.batches b SET expected_size = c.n, succeeded = c.ok, failed = c.bad,
       status = CASE WHEN c.live = 0 THEN 'complete' ELSE 'active' END
     FROM (SELECT batch_id, count(*) AS n, count(*) FILTER (WHERE status = 'succeeded') AS ok,
                  count(*) FILTER (WHERE status = 'failed') AS bad,
                  count(*) FILTER (WHERE status IN ('pending', 'scheduled', 'running')) AS live
           FROM $S.jobs WHERE batch_id IS NOT NULL GROUP BY batch_id) c
     WHERE b.id = c.batch_id`,
  );
  let t0 = performance.now();
  await sql(
    `INSERT INTO $S.job_attempts (job_id, attempt, started_at, finished_at, duration_ms, outcome,
       error_class, error_message)
     SELECT id, greatest(attempt, 1), started_at, finished_at, 1000 * extract(epoch FROM finished_at - started_at),
            status::text, error_class, error_message
     FROM $S.jobs WHERE finished_at IS NOT NULL AND get_byte(uuid_send(id), 15) % 10 = 0`,
  );
  await sql(
    `INSERT INTO $S.job_events (job_id, occurred_at, kind, detail)
     SELECT a.job_id, t.at, 'state_change', jsonb_build_object('from', t.f, 'to', t.t)
     FROM $S.job_attempts a
     CROSS JOIN LATERAL (VALUES (a.started_at, 'pending', 'running'), (a.finished_at, 'running', a.outcome)) t(at, f, t)`,
  );
  log(`attempts and events in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  t0 = performance.now();
  // What autovacuum would have done by the time anyone looks: statistics and the visibility map.
  await sql(`VACUUM (ANALYZE) $S.jobs`);
  await sql(`VACUUM (ANALYZE) $S.job_attempts`);
  await sql(`VACUUM (ANALYZE) $S.job_events`);
  await sql(`ANALYZE $S.batches`);
  log(`vacuum analyze in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

// $1..$2 row numbers, $3 total jobs, $4 actors, $5 queues, $6 first batch child, $7 children per
// batch, $8 batch ids. h* are independent hashes of the row number; r picks the status (per 1,000).
const INSERT_JOBS = `
INSERT INTO $S.jobs (id, created_at, scheduled_at, status, priority, actor, queue, idempotency_key,
  metadata, tags, locked_by_worker, finished_at, started_at, attempt, max_attempts, retry_kind,
  error_class, error_message, error_traceback, payload, result, batch_id)
SELECT
  -- UUIDv7 shape: 48 bits of milliseconds, version 7, variant 8, the rest from a hash.
  (lpad(to_hex((extract(epoch FROM g.created) * 1000)::int8), 12, '0') || '7' || substr(g.md, 1, 3) || '8'
    || substr(g.md, 4, 15))::uuid,
  g.created,
  CASE WHEN g.st = 'scheduled' THEN now() + interval '1 second' * (g.h3 % 86400) ELSE g.created END,
  g.st::$S.job_status,
  CASE WHEN g.h3 % 20 = 0 THEN 10 ELSE 0 END,
  ($4::text[])[g.a + 1],
  ($5::text[])[g.a / 2 + 1],
  CASE WHEN g.h2 % 10 = 0 THEN 'order-' || g.i END,
  CASE WHEN g.b IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('batch_id', g.b) END,
  CASE WHEN g.h2 % 10 < 3 THEN
    array_remove(ARRAY[CASE WHEN g.h2 % 10 < 2 THEN 'nightly' END, 'tenant-' || (g.h3 % 50),
                       CASE WHEN g.i % 10000 = 0 THEN 'vip' END], NULL)
  ELSE '{}'::text[] END,
  CASE WHEN g.st = 'running' THEN '00000000-0000-7000-8000-00000000b001'::uuid END,
  CASE WHEN g.terminal THEN g.created + interval '1 millisecond' * (50 + g.h3 % 5000) END,
  CASE WHEN g.terminal OR g.st = 'running' THEN g.created + interval '1 millisecond' * 20 END,
  CASE WHEN g.terminal THEN 1 + g.h3 % 3 WHEN g.st = 'running' THEN 1 ELSE 0 END,
  3,
  'transient',
  CASE WHEN g.st IN ('failed', 'crashed') THEN 'TimeoutError' END,
  CASE WHEN g.st IN ('failed', 'crashed') THEN 'upstream timed out after 30 s (request ' || g.i || ')' END,
  CASE WHEN g.st IN ('failed', 'crashed') THEN 'TimeoutError: upstream timed out' || repeat(E'\\n    at frame (worker.js:1:1)', 20) END,
  jsonb_build_object('order', g.i, 'customer', 'c-' || (g.h2 % 100000), 'amount_cents', g.h3 % 100000),
  CASE WHEN g.st = 'succeeded' THEN '{"ok": true}'::jsonb END,
  CASE WHEN g.b IS NOT NULL THEN g.b::uuid END
FROM (
  SELECT x.*, x.st IN ('succeeded', 'failed', 'cancelled', 'crashed', 'abandoned') AS terminal
  FROM (
    SELECT i,
      now() - interval '30 days' * (($3 - i)::float8 / $3) AS created,
      md5(i::text) AS md,
      -- Uneven actors: a third of the jobs to the first queue's two actors.
      CASE WHEN abs(hashint4(i)::int8) % 3 = 0 THEN abs(hashint4(i * 3)::int8) % 2 ELSE abs(hashint4(i * 5)::int8) % 12 END AS a,
      abs(hashint4(i # 1431655765)::int8) AS h2,
      abs(hashint4(i # 715827882)::int8) AS h3,
      CASE WHEN i >= $6 THEN ($8::text[])[1 + (i - $6) / $7] END AS b,
      CASE
        -- Live jobs are recent: what a worker has not reached yet is what was enqueued last.
        WHEN i > $3 - $3 / 20 AND abs(hashint4(-i)::int8) % 1000 < 300 THEN 'pending'
        WHEN i > $3 - $3 / 20 AND abs(hashint4(-i)::int8) % 1000 < 500 THEN 'scheduled'
        WHEN i > $3 - $3 / 20 AND abs(hashint4(-i)::int8) % 1000 < 520 THEN 'running'
        WHEN abs(hashint4(i # 123456789)::int8) % 1000 < 40 THEN 'failed'
        WHEN abs(hashint4(i # 123456789)::int8) % 1000 < 45 THEN 'cancelled'
        WHEN abs(hashint4(i # 123456789)::int8) % 1000 < 48 THEN 'crashed'
        WHEN abs(hashint4(i # 123456789)::int8) % 1000 < 49 THEN 'abandoned'
        ELSE 'succeeded'
      END AS st
    FROM generate_series($1::int, $2::int) AS i
  ) x
) g`;
