import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { CliIo } from '../../src/cli/io.js';
import { SHOWN_ERROR_MAX_CHARS, SHOWN_VALUE_MAX_CHARS } from '../../src/cli/job-view.js';
import { runCli } from '../../src/cli/main.js';
import { newJobId } from '../../src/core/ids.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';

let db: TestSchema;
let s: string;
beforeAll(async () => {
  db = await migratedSchema('clijobs');
  s = `"${db.schema}"`;
});
afterAll(async () => {
  await db.drop();
});

/** A payload value that must never appear in output unless `--payload` is given. */
const SECRET = 'card-4111-1111-1111-1111';

interface JobSpec {
  status: 'pending' | 'scheduled' | 'running' | 'succeeded' | 'failed' | 'cancelled';
  queue: string;
  actor?: string;
  tags?: string[];
  identityKey?: string | null;
  payload?: unknown;
  result?: unknown;
  /** Seconds before now the job was created (distinct values give a stable order). */
  ageS?: number;
  errorClass?: string;
  errorMessage?: string;
  errorTraceback?: string;
}

let clock = 0;
/** Inserts a job row in the given state and returns its id. */
async function insertJob(j: JobSpec): Promise<string> {
  clock += 1;
  const id = newJobId(Date.now() - 1_000_000 + clock);
  const age = j.ageS ?? 1000 - clock;
  const terminal = ['succeeded', 'failed', 'cancelled'].includes(j.status);
  await db.pool.query(
    `INSERT INTO ${s}.jobs (id, actor, queue, payload, status, attempt, max_attempts, retry_kind, identity_key,
       tags, created_at, scheduled_at, started_at, finished_at, locked_by_worker, lock_expires_at,
       error_class, error_message, error_traceback, result)
     VALUES ($1, $2, $3, $4, $5::text::${s}.job_status, $6, 3, 'transient', $7, $8, now() - make_interval(secs => $9),
       CASE WHEN $5::text = 'scheduled' THEN now() + interval '1 hour' ELSE now() - make_interval(secs => $9) END,
       CASE WHEN $5::text IN ('running', 'succeeded', 'failed') THEN now() END,
       CASE WHEN $10 THEN now() END,
       CASE WHEN $5::text = 'running' THEN '00000000-0000-4000-8000-00000000beef'::uuid END,
       CASE WHEN $5::text = 'running' THEN now() + interval '1 hour' END,
       $11, $12, $13, $14)`,
    [
      id,
      j.actor ?? 'cli_mailer',
      j.queue,
      JSON.stringify(j.payload ?? { card: SECRET }),
      j.status,
      j.status === 'pending' || j.status === 'scheduled' ? 0 : j.status === 'failed' ? 3 : 1,
      j.identityKey ?? null,
      j.tags ?? [],
      age,
      terminal,
      j.errorClass ?? null,
      j.errorMessage ?? null,
      j.errorTraceback ?? null,
      j.result === undefined ? null : JSON.stringify(j.result),
    ],
  );
  return id;
}

const statusOf = async (id: string): Promise<string> =>
  (await db.pool.query(`SELECT status FROM ${s}.jobs WHERE id = $1`, [id])).rows[0].status as string;

const countWhere = async (where: string, params: unknown[] = []): Promise<number> =>
  Number((await db.pool.query(`SELECT count(*) AS n FROM ${s}.jobs WHERE ${where}`, params)).rows[0].n);

interface RunOptions {
  /** Simulate a terminal: the answers typed, in order. */
  answers?: string[];
}

async function run(
  argv: string[],
  options: RunOptions = {},
): Promise<{ code: number; out: string; err: string; asked: string[] }> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const asked: string[] = [];
  const answers = [...(options.answers ?? [])];
  const io: CliIo = {
    out: (l) => stdout.push(l),
    err: (l) => stderr.push(l),
    env: { TASKQ_PG_DSN: TEST_DSN, TASKQ_SCHEMA_NAME: db.schema },
    ...(options.answers === undefined
      ? {}
      : {
          interactive: true,
          ask: (q: string) => {
            asked.push(q);
            return Promise.resolve(answers.shift() ?? '');
          },
        }),
  };
  const code = await runCli(argv, io);
  return { code, out: stdout.join('\n'), err: stderr.join('\n'), asked };
}

/** `run` for a command that prints JSON: exit 0, stdout parsed. */
async function runJson<T = Record<string, unknown>>(...argv: string[]): Promise<T> {
  const r = await run([...argv, '--json']);
  expect(r.code, r.err).toBe(0);
  return JSON.parse(r.out) as T;
}

interface ListJson {
  jobs: Record<string, unknown>[];
  nextCursor: string | null;
}

describe('taskq jobs list', () => {
  it('filters by queue, status, actor, identity key and tag, and never prints a payload', async () => {
    const failed = await insertJob({
      queue: 'cl_list',
      status: 'failed',
      tags: ['vip', 'eu'],
      errorClass: 'SmtpError',
      errorMessage: 'refused',
    });
    const pending = await insertJob({
      queue: 'cl_list',
      status: 'pending',
      tags: ['vip'],
      identityKey: 'u-1',
    });
    const other = await insertJob({ queue: 'cl_list', status: 'succeeded', actor: 'cli_other' });
    await insertJob({ queue: 'cl_list_elsewhere', status: 'failed' });

    const ids = (page: ListJson): string[] => page.jobs.map((j) => j.id as string).sort();
    expect(ids(await runJson<ListJson>('jobs', 'list', '--queue', 'cl_list'))).toEqual(
      [failed, pending, other].sort(),
    );
    expect(ids(await runJson<ListJson>('jobs', 'list', '--queue', 'cl_list', '--status', 'failed'))).toEqual([
      failed,
    ]);
    expect(
      ids(await runJson<ListJson>('jobs', 'list', '--queue', 'cl_list', '--status', 'failed,pending')),
    ).toEqual([failed, pending].sort());
    expect(
      ids(
        await runJson<ListJson>(
          'jobs',
          'list',
          '--queue',
          'cl_list',
          '--status',
          'failed',
          '--status',
          'succeeded',
        ),
      ),
    ).toEqual([failed, other].sort());
    expect(ids(await runJson<ListJson>('jobs', 'list', '--actor', 'cli_other'))).toEqual([other]);
    expect(ids(await runJson<ListJson>('jobs', 'list', '--identity-key', 'u-1'))).toEqual([pending]);
    expect(ids(await runJson<ListJson>('jobs', 'list', '--tag', 'vip,eu'))).toEqual([failed]);
    expect(ids(await runJson<ListJson>('jobs', 'list', '--queue', 'cl_list', '--active'))).toEqual([pending]);
    expect(ids(await runJson<ListJson>('jobs', 'list', '--queue', 'cl_list', '--finished'))).toEqual(
      [failed, other].sort(),
    );

    const page = await runJson<ListJson>('jobs', 'list', '--queue', 'cl_list');
    expect(page.nextCursor).toBeNull();
    const row = page.jobs.find((j) => j.id === failed)!;
    expect(row).toMatchObject({
      actor: 'cli_mailer',
      queue: 'cl_list',
      status: 'failed',
      errorClass: 'SmtpError',
    });
    expect(row).not.toHaveProperty('payload');
    expect(row).not.toHaveProperty('result');

    const table = await run(['jobs', 'list', '--queue', 'cl_list', '--status', 'failed']);
    expect(table.code).toBe(0);
    const [header, line] = table.out.split('\n');
    expect(header).toMatch(
      /^ID\s+ACTOR\s+QUEUE\s+STATUS\s+ATTEMPT\s+CREATED \(UTC\)\s+SCHEDULED\/FINISHED \(UTC\)\s+ERROR$/,
    );
    expect(line).toMatch(
      new RegExp(`^${failed}\\s+cli_mailer\\s+cl_list\\s+failed\\s+3/3\\s+\\S+Z\\s+\\S+Z\\s+SmtpError$`),
    );
    const all = await run(['jobs', 'list']);
    expect(all.out + (await run(['jobs', 'list', '--json'])).out).not.toContain(SECRET);
  });

  it('pages with --limit and --cursor until every row was seen once, in order', async () => {
    const made: string[] = [];
    for (let i = 0; i < 7; i++)
      made.push(await insertJob({ queue: 'cl_page', status: 'pending', ageS: 100 - i }));
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: ListJson = await runJson<ListJson>(
        'jobs',
        'list',
        '--queue',
        'cl_page',
        '--order-by',
        'created_at_desc',
        '--limit',
        '3',
        ...(cursor === null ? [] : ['--cursor', cursor]),
      );
      seen.push(...page.jobs.map((j) => j.id as string));
      cursor = page.nextCursor;
      pages += 1;
    } while (cursor !== null && pages < 10);
    expect(seen).toEqual([...made].reverse());
    expect(pages).toBeGreaterThanOrEqual(3);

    const first = await run(['jobs', 'list', '--queue', 'cl_page', '--limit', '3']);
    expect(first.out.split('\n').at(-1)).toMatch(/^next page: --cursor \S+$/);
  });

  it.each([
    [['--status', 'done'], '--status: "done" is invalid'],
    [['--status', 'pending,done'], '--status: "done" is invalid'],
    [['--limit', 'x'], '--limit: "x" is invalid'],
    [['--limit', '5000'], '--limit: 5000 is invalid'],
    [['--cursor', 'not-a-cursor'], '--cursor: "not-a-cursor" is invalid'],
    [['--batch-id', '42'], '--batch-id: "42" is invalid: must be a UUID'],
    [['--order-by', 'random'], '--order-by: "random" is invalid'],
    [['--active', '--finished'], '--active and --finished are mutually exclusive'],
    [['--status', 'pending', '--active'], '--status and --active are mutually exclusive'],
    [['--queue', 'a\u0000b'], '--queue'],
    [['--no-such-flag'], "unknown option '--no-such-flag'"],
  ])('refuses %j with exit 2 naming the flag', async (args, message) => {
    const r = await run(['jobs', 'list', ...args]);
    expect(r.code).toBe(2);
    expect(r.err).toContain(message);
  });
});

describe('taskq jobs show', () => {
  it('hides the payload and result by default and shows them with --payload', async () => {
    const id = await insertJob({
      queue: 'cl_show',
      status: 'failed',
      result: { receipt: 'r-77' },
      errorClass: 'SmtpError',
      errorMessage: 'mailbox full',
      errorTraceback: 'SmtpError: mailbox full\n    at send (mail.ts:10)',
    });
    const plain = await run(['jobs', 'show', id]);
    expect(plain.code, plain.err).toBe(0);
    expect(plain.out).toContain(`job ${id}`);
    expect(plain.out).toMatch(/status\s+failed/);
    expect(plain.out).toMatch(/payload\s+\(hidden: pass --payload to show it\)/);
    expect(plain.out).toContain('error         SmtpError: mailbox full');
    expect(plain.out).toContain('    at send (mail.ts:10)');
    expect(plain.out).not.toContain(SECRET);
    expect(plain.out).not.toContain('r-77');

    const json = await runJson('jobs', 'show', id);
    expect(json).toMatchObject({ id, status: 'failed', errorClass: 'SmtpError', attempts: [], events: [] });
    expect(json).not.toHaveProperty('payload');
    expect(JSON.stringify(json)).not.toContain(SECRET);

    const shown = await run(['jobs', 'show', id, '--payload']);
    expect(shown.out).toContain(SECRET);
    expect(shown.out).toContain('"receipt":"r-77"');
    const shownJson = await runJson('jobs', 'show', id, '--payload');
    expect(shownJson).toMatchObject({
      payload: { value: { card: SECRET } },
      result: { value: { receipt: 'r-77' } },
    });
  });

  it('bounds a large payload and a long traceback', async () => {
    const big = 'x'.repeat(SHOWN_VALUE_MAX_CHARS * 3);
    const id = await insertJob({
      queue: 'cl_show',
      status: 'failed',
      payload: { big },
      errorClass: 'Boom',
      errorMessage: 'boom',
      errorTraceback: `Boom\n${'y'.repeat(SHOWN_ERROR_MAX_CHARS * 3)}`,
    });
    const r = await run(['jobs', 'show', id, '--payload']);
    expect(r.code).toBe(0);
    const payloadLine = r.out.split('\n').find((l) => l.trimStart().startsWith('payload'))!;
    expect(payloadLine.length).toBeLessThan(SHOWN_VALUE_MAX_CHARS + 100);
    expect(payloadLine).toMatch(/… \(\d+ more characters\)$/);
    const tracebackChars = r.out
      .split('\n')
      .filter((l) => l.includes('yyyy'))
      .join('').length;
    expect(tracebackChars).toBeLessThan(SHOWN_ERROR_MAX_CHARS + 100);

    const json = await runJson<{ payload: { preview: string; chars: number }; errorTraceback: string }>(
      'jobs',
      'show',
      id,
      '--payload',
    );
    expect(json.payload.preview.length).toBe(SHOWN_VALUE_MAX_CHARS);
    expect(json.payload.chars).toBe(JSON.stringify({ big }).length);
    expect(json.errorTraceback.length).toBeLessThan(SHOWN_ERROR_MAX_CHARS + 100);
  });

  it('shows attempts and events', async () => {
    const id = await insertJob({ queue: 'cl_show', status: 'pending' });
    expect((await run(['jobs', 'cancel', id, '--reason', 'operator says no'])).code).toBe(0);
    await db.pool.query(
      `INSERT INTO ${s}.job_attempts (job_id, attempt, worker_id, started_at, finished_at, outcome, error_class, error_message)
       VALUES ($1, 1, '00000000-0000-4000-8000-00000000cafe', now() - interval '1 second', now(), 'failed', 'Timeout', 'took too long')`,
      [id],
    );
    const r = await run(['jobs', 'show', id]);
    expect(r.out).toContain('attempts (1):');
    expect(r.out).toMatch(
      /1\s+failed\s+00000000-0000-4000-8000-00000000cafe\s+\S+Z\s+\S+Z\s+-\s+Timeout: took too long/,
    );
    expect(r.out).toMatch(/events \(\d+\):/);
    expect(r.out).toContain('pending → cancelled');
    const json = await runJson<{ events: { kind: string }[]; attempts: { outcome: string }[] }>(
      'jobs',
      'show',
      id,
    );
    expect(json.attempts.map((a) => a.outcome)).toEqual(['failed']);
    expect(json.events.some((e) => e.kind === 'state_change')).toBe(true);
  });

  it('exits 1 for an unknown job and 2 for an id that is not a UUID', async () => {
    expect(await run(['jobs', 'show', '00000000-0000-4000-8000-000000000000'])).toMatchObject({ code: 1 });
    const bad = await run(['jobs', 'show', 'nope']);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('<id>: "nope" is invalid: must be a UUID');
  });
});

describe('taskq jobs retry', () => {
  it('sends a failed job back to pending, and refuses a running one with exit 1', async () => {
    const failed = await insertJob({ queue: 'cl_retry', status: 'failed', errorClass: 'X' });
    const r = await run(['jobs', 'retry', failed]);
    expect(r).toMatchObject({
      code: 0,
      out: `job ${failed}: failed → pending (attempts start again from 1)`,
    });
    expect(await statusOf(failed)).toBe('pending');

    const running = await insertJob({ queue: 'cl_retry', status: 'running' });
    const refused = await run(['jobs', 'retry', running]);
    expect(refused.code).toBe(1);
    expect(refused.err).toContain(`job ${running} is running: only`);
    expect(await statusOf(running)).toBe('running');

    expect((await run(['jobs', 'retry', '00000000-0000-4000-8000-000000000000'])).code).toBe(1);
  });

  it('retries by filter with --yes: only failed, crashed, cancelled or abandoned matches', async () => {
    const failed = await insertJob({ queue: 'cl_rbulk', status: 'failed', errorClass: 'Smtp' });
    const cancelled = await insertJob({ queue: 'cl_rbulk', status: 'cancelled' });
    await insertJob({ queue: 'cl_rbulk', status: 'succeeded' });
    await insertJob({ queue: 'cl_rbulk', status: 'pending' });
    const elsewhere = await insertJob({ queue: 'cl_rbulk_other', status: 'failed' });
    const r = await runJson<{ retried: number; retriedIds: string[] }>(
      'jobs',
      'retry',
      '--where',
      '--queue',
      'cl_rbulk',
      '--yes',
    );
    expect(r).toMatchObject({ dryRun: false, retried: 2, retriedIds: [failed, cancelled].sort() });
    expect(await statusOf(failed)).toBe('pending');
    expect(await statusOf(cancelled)).toBe('pending');
    expect(await statusOf(elsewhere)).toBe('failed');
    expect(await countWhere(`queue = 'cl_rbulk' AND status = 'succeeded'`)).toBe(1);
    const again = await run(['jobs', 'retry', '--where', '--queue', 'cl_rbulk', '--yes']);
    expect(again).toMatchObject({
      code: 0,
      out: 'no failed, crashed, cancelled or abandoned job matches: nothing to retry',
    });
  });

  it('retry --where asks on a terminal and refuses without one: nothing retried unless confirmed', async () => {
    for (let i = 0; i < 2; i++) await insertJob({ queue: 'cl_rask', status: 'failed' });
    const script = await run(['jobs', 'retry', '--where', '--queue', 'cl_rask']);
    expect(script.code).toBe(2);
    expect(script.err).toContain('refusing to retry without confirmation: matches 2 failed, crashed');
    const no = await run(['jobs', 'retry', '--where', '--queue', 'cl_rask'], { answers: ['no'] });
    expect(no.code).toBe(1);
    expect(no.asked).toEqual(['type yes to retry 2 jobs: ']);
    expect(await countWhere(`queue = 'cl_rask' AND status = 'failed'`)).toBe(2);
    const yes = await run(['jobs', 'retry', '--where', '--queue', 'cl_rask'], { answers: ['yes'] });
    expect(yes).toMatchObject({
      code: 0,
      out: 'retried 2 jobs: back to pending, attempts start again from 1',
    });
    expect(await countWhere(`queue = 'cl_rask' AND status = 'pending'`)).toBe(2);
  });

  it.each([
    [['jobs', 'retry'], 'give a job id, or --where'],
    [['jobs', 'retry', '--where'], 'retry --where needs at least one filter'],
    [['jobs', 'retry', '00000000-0000-4000-8000-000000000000', '--where', '--queue', 'q'], 'not both'],
    [['jobs', 'retry', '00000000-0000-4000-8000-000000000000', '--queue', 'q'], 'go with --where'],
    [
      ['jobs', 'retry', '--where', '--queue', 'cl_rbad', '--status', 'pending', '--yes'],
      '--status: "pending" is invalid: cannot be retried',
    ],
    [
      ['jobs', 'retry', '--where', '--queue', 'cl_rbad', '--active', '--yes'],
      '--active: true is invalid: matches no job',
    ],
  ])('retry refuses %j with exit 2', async (argv, message) => {
    const failed = await insertJob({ queue: 'cl_rbad', status: 'failed' });
    const r = await run(argv);
    expect(r.code, r.err).toBe(2);
    expect(r.err).toContain(message);
    expect(await statusOf(failed)).toBe('failed');
  });
});

describe('taskq jobs cancel', () => {
  it('cancels one pending job; a finished one exits 1', async () => {
    const id = await insertJob({ queue: 'cl_cancel', status: 'pending' });
    expect(await run(['jobs', 'cancel', id])).toMatchObject({
      code: 0,
      out: `job ${id}: pending → cancelled`,
    });
    expect(await statusOf(id)).toBe('cancelled');
    expect((await run(['jobs', 'cancel', id])).out).toBe(`job ${id}: already cancelled`);

    const running = await insertJob({ queue: 'cl_cancel', status: 'running' });
    expect((await run(['jobs', 'cancel', running])).out).toContain('running, cancel requested');
    expect(await countWhere('id = $1 AND cancel_requested_at IS NOT NULL', [running])).toBe(1);

    const done = await insertJob({ queue: 'cl_cancel', status: 'succeeded' });
    const refused = await run(['jobs', 'cancel', done]);
    expect(refused.code).toBe(1);
    expect(refused.err).toContain('is succeeded: a finished job cannot be cancelled');
    const refusedJson = await run(['jobs', 'cancel', done, '--json']);
    expect(refusedJson.code).toBe(1);
    expect(JSON.parse(refusedJson.out)).toMatchObject({
      jobId: done,
      previousStatus: 'succeeded',
      newStatus: 'succeeded',
      cancellationInitiated: false,
    });
    expect(await statusOf(done)).toBe('succeeded');
  });

  it('cancels by filter with --yes and prints counts that match the database', async () => {
    for (let i = 0; i < 3; i++) await insertJob({ queue: 'cl_bulk', status: 'pending' });
    await insertJob({ queue: 'cl_bulk', status: 'scheduled' });
    await insertJob({ queue: 'cl_bulk', status: 'running' });
    await insertJob({ queue: 'cl_bulk', status: 'succeeded' });
    await insertJob({ queue: 'cl_bulk_other', status: 'pending' });

    const r = await runJson<{ cancelledDirectly: number; cancelRequested: number; totalAffected: number }>(
      'jobs',
      'cancel',
      '--where',
      '--queue',
      'cl_bulk',
      '--reason',
      'bad deploy',
      '--yes',
    );
    expect(r).toMatchObject({ cancelledDirectly: 4, cancelRequested: 1, totalAffected: 5 });
    expect(await countWhere(`queue = 'cl_bulk' AND status = 'cancelled'`)).toBe(r.cancelledDirectly);
    expect(
      await countWhere(`queue = 'cl_bulk' AND status = 'running' AND cancel_requested_at IS NOT NULL`),
    ).toBe(r.cancelRequested);
    expect(await countWhere(`queue = 'cl_bulk_other' AND status = 'pending'`)).toBe(1);
    expect(await countWhere(`queue = 'cl_bulk' AND status = 'succeeded'`)).toBe(1);

    const text = await run(['jobs', 'cancel', '--where', '--queue', 'cl_bulk', '--yes']);
    expect(text).toMatchObject({ code: 0, out: 'no active job matches: nothing to cancel' });
  });

  it('refuses without --yes and without a terminal: nothing is cancelled', async () => {
    for (let i = 0; i < 2; i++) await insertJob({ queue: 'cl_keep', status: 'pending' });
    const r = await run(['jobs', 'cancel', '--where', '--queue', 'cl_keep']);
    expect(r.code).toBe(2);
    expect(r.err).toContain('refusing to cancel without confirmation: 2 pending or scheduled jobs');
    expect(r.err).toContain('pass --yes');
    expect(await countWhere(`queue = 'cl_keep' AND status = 'pending'`)).toBe(2);
  });

  it('asks on a terminal: anything but yes cancels nothing; yes cancels', async () => {
    for (let i = 0; i < 2; i++) await insertJob({ queue: 'cl_ask', status: 'pending' });
    const no = await run(['jobs', 'cancel', '--where', '--queue', 'cl_ask'], { answers: ['y'] });
    expect(no.code).toBe(1);
    expect(no.asked).toEqual(['type yes to cancel 2 jobs: ']);
    expect(no.err).toContain(
      'matches 2 pending or scheduled jobs to cancel at once, 0 running jobs to ask to cancel',
    );
    expect(no.err).toContain('not confirmed: nothing cancelled');
    expect(await countWhere(`queue = 'cl_ask' AND status = 'pending'`)).toBe(2);

    const yes = await run(['jobs', 'cancel', '--where', '--queue', 'cl_ask'], { answers: ['yes'] });
    expect(yes).toMatchObject({
      code: 0,
      out: 'cancelled 2 jobs at once, cancel requested for 0 running jobs (2 in all)',
    });
    expect(await countWhere(`queue = 'cl_ask' AND status = 'cancelled'`)).toBe(2);
  });

  it.each([
    [['jobs', 'cancel'], 'give a job id, or --where'],
    [['jobs', 'cancel', '--where'], 'cancel --where needs at least one filter'],
    [['jobs', 'cancel', '00000000-0000-4000-8000-000000000000', '--where', '--queue', 'q'], 'not both'],
    [['jobs', 'cancel', '00000000-0000-4000-8000-000000000000', '--queue', 'q'], 'only with --where'],
    [['jobs', 'cancel', '--where', '--status', 'nope', '--yes'], '--status: "nope" is invalid'],
    [['jobs', 'cancel', '--where', '--queue', 'q', '--reason', 'a\u0000b', '--yes'], '--reason'],
  ])('refuses %j with exit 2', async (argv, message) => {
    const r = await run(argv);
    expect(r.code).toBe(2);
    expect(r.err).toContain(message);
  });
});

describe('taskq actors and taskq queues list', () => {
  it('lists actors with their stored capacity, as a table and as JSON', async () => {
    await db.pool.query(
      `INSERT INTO ${s}.actor_config (actor, queue, max_concurrent, max_pending, result_ttl)
       VALUES ('cl_actor_a', 'cl_aq', 4, 100, interval '1 hour'), ('cl_actor_b', 'cl_bq', NULL, NULL, NULL)`,
    );
    const r = await run(['actors']);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/^ACTOR\s+QUEUE\s+MAX CONCURRENT\s+MAX PENDING\s+RESULT TTL\s+UPDATED \(UTC\)/);
    expect(r.out).toMatch(/cl_actor_a\s+cl_aq\s+4\s+100\s+3600000ms/);
    expect(r.out).toMatch(/cl_actor_b\s+cl_bq\s+-\s+-\s+-/);
    expect((await run(['actors', 'list'])).out).toBe(r.out);
    const json = await runJson<{ actor: string; maxPending: number | null }[]>('actors');
    expect(json.filter((a) => a.actor.startsWith('cl_actor'))).toMatchObject([
      { actor: 'cl_actor_a', maxPending: 100 },
      { actor: 'cl_actor_b', maxPending: null },
    ]);
  });

  it('lists queues with counts by status that match the database', async () => {
    for (let i = 0; i < 3; i++) await insertJob({ queue: 'cl_qv', status: 'pending' });
    for (let i = 0; i < 2; i++) await insertJob({ queue: 'cl_qv', status: 'scheduled' });
    await insertJob({ queue: 'cl_qv', status: 'running' });
    await insertJob({ queue: 'cl_qv', status: 'succeeded' });
    expect((await run(['queues', 'set-max-concurrent', 'cl_qv', '--max-concurrent', '2'])).code).toBe(0);

    const r = await run(['queues', 'list']);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(
      /^QUEUE\s+MODE\s+MAX CONCURRENT\s+PENDING\s+SCHEDULED\s+RUNNING\s+OLDEST PENDING\s+WORKERS/,
    );
    expect(r.out).toMatch(/cl_qv\s+strict_fifo\s+2\s+3\s+2\s+1\s+\d+s\s+0 \(no alive worker!\)/);

    const json = await runJson<{ name: string }[]>('queues', 'list');
    const row = json.find((q) => q.name === 'cl_qv');
    const db3 = async (st: string): Promise<number> => countWhere(`queue = 'cl_qv' AND status = $1`, [st]);
    expect(row).toMatchObject({
      name: 'cl_qv',
      mode: 'strict_fifo',
      maxConcurrent: 2,
      configured: true,
      pending: await db3('pending'),
      scheduled: await db3('scheduled'),
      running: await db3('running'),
      workersAlive: 0,
    });
  });
});
