import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import type { CliIo } from '../../src/cli/io.js';
import { runCli } from '../../src/cli/main.js';
import { migratedSchema, TEST_DSN, uniqueSchemaName, type TestSchema } from '../helpers/db.js';

const ACTORS = 'test/fixtures/cli/actors.ts';
const GATED = 'test/fixtures/cli/enqueue-actors.ts';

let db: TestSchema;
let s: string;
beforeAll(async () => {
  db = await migratedSchema('clienq');
  s = `"${db.schema}"`;
});
afterAll(async () => {
  await db.drop();
});
beforeEach(async () => {
  await db.pool.query(`TRUNCATE ${s}.jobs`);
});

async function run(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const io: CliIo = {
    out: (l) => stdout.push(l),
    err: (l) => stderr.push(l),
    env: { TASKQ_PG_DSN: TEST_DSN, TASKQ_SCHEMA_NAME: db.schema },
  };
  const code = await runCli(['jobs', 'enqueue', ...argv], io);
  return { code, out: stdout.join('\n'), err: stderr.join('\n') };
}

const jobCount = async (): Promise<number> =>
  Number((await db.pool.query(`SELECT count(*) AS n FROM ${s}.jobs`)).rows[0].n);

describe('taskq jobs enqueue', () => {
  it("enqueues one job of the module's actor with the payload and options given", async () => {
    const r = await run(
      'cli_echo',
      '--module',
      ACTORS,
      '--payload',
      '{"text":"hello"}',
      '--queue',
      'cli_other',
      '--priority',
      '7',
      '--identity-key',
      'order-42',
      '--tag',
      'manual,ops',
      '--tag',
      'backfill',
    );
    expect(r.code, r.err).toBe(0);
    const id = /^enqueued job (\S+) \(actor cli_echo, queue cli_other\): pending$/.exec(r.out)?.[1];
    expect(id, r.out).toBeDefined();
    const row = (await db.pool.query(`SELECT * FROM ${s}.jobs WHERE id = $1`, [id])).rows[0];
    expect(row).toMatchObject({
      actor: 'cli_echo',
      queue: 'cli_other',
      payload: { text: 'hello' },
      status: 'pending',
      priority: 7,
      identity_key: 'order-42',
      tags: ['manual', 'ops', 'backfill'],
    });
  });

  it('schedules with --delay or --scheduled-at, and prints JSON with --json', async () => {
    const delayed = await run(
      'cli_echo',
      '--module',
      ACTORS,
      '--payload',
      '{"text":"later"}',
      '--delay',
      '5m',
    );
    expect(delayed.code, delayed.err).toBe(0);
    expect(delayed.out).toMatch(/: scheduled at \d{4}-\d\d-\d\dT/);
    const at = '2099-01-01T00:00:00.000Z';
    const r = await run(
      'cli_echo',
      '--module',
      ACTORS,
      '--payload',
      '{"text":"x"}',
      '--scheduled-at',
      at,
      '--json',
    );
    expect(r.code, r.err).toBe(0);
    const job = JSON.parse(r.out) as Record<string, unknown>;
    expect(job).toMatchObject({ actor: 'cli_echo', status: 'scheduled', scheduledAt: at, existing: false });
    // Payloads stay out of the output unless asked for, as in `jobs show`.
    expect(r.out).not.toContain('"x"');
  });

  it('returns the existing job for an idempotency key already used, writing no second job', async () => {
    const args = ['cli_echo', '--module', ACTORS, '--payload', '{"text":"once"}', '--idempotency-key', 'k-1'];
    const first = await run(...args);
    const second = await run(...args);
    expect(first.code, first.err).toBe(0);
    expect(second.code, second.err).toBe(0);
    const id = first.out.split(' ')[2];
    expect(second.out).toMatch(new RegExp(`^existing job ${id} `));
    expect(await jobCount()).toBe(1);
  });

  it("exits 1 for an idempotency key another actor's job holds, writing nothing", async () => {
    const first = await run(
      'cli_echo',
      '--module',
      ACTORS,
      '--payload',
      '{"text":"a"}',
      '--idempotency-key',
      'k-2',
    );
    expect(first.code, first.err).toBe(0);
    const r = await run(
      'cli_sum',
      '--module',
      ACTORS,
      '--payload',
      '{"values":[1]}',
      '--idempotency-key',
      'k-2',
    );
    expect(r.code).toBe(1);
    expect(r.err).toContain('cli_echo');
    expect(await jobCount()).toBe(1);
  });

  it('takes an actor without a payload schema with no --payload (null)', async () => {
    const r = await run('cli_anything', '--module', GATED);
    expect(r.code, r.err).toBe(0);
    expect((await db.pool.query(`SELECT payload FROM ${s}.jobs`)).rows[0].payload).toBeNull();
  });

  it("exits 1 when a gate refuses the job (the actor's maxPending), writing nothing more", async () => {
    expect((await run('cli_capped', '--module', GATED, '--payload', '{"n":1}')).code).toBe(0);
    const r = await run('cli_capped', '--module', GATED, '--payload', '{"n":2}');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/max_?pending|maxPending/i);
    expect(await jobCount()).toBe(1);
  });

  it.each([
    [[], 'pass --module <path>'],
    [['--module', 'test/fixtures/cli/missing.ts'], '--module test/fixtures/cli/missing.ts: no such file'],
    [['--module', ACTORS], '<actor>: "cli_nope" is not an actor of --module'],
  ])('refuses %j for an actor it cannot find: exit 2, nothing written', async (flags, message) => {
    const r = await run('cli_nope', ...flags);
    expect(r.code).toBe(2);
    expect(r.err).toContain(message);
    expect(await jobCount()).toBe(0);
  });

  it.each([
    [['--payload', '{text'], '--payload: "{text" is invalid: must be JSON'],
    [['--payload', '{"text":1}'], '--payload: payload for actor "cli_echo" is invalid: text:'],
    [
      ['--payload', '{"text":"x"}', '--priority', 'high'],
      '--priority: "high" is invalid: must be an integer',
    ],
    [['--payload', '{"text":"x"}', '--delay', 'soon'], '--delay: "soon" is invalid'],
    [['--payload', '{"text":"x"}', '--scheduled-at', 'tomorrow'], '--scheduled-at: "tomorrow" is invalid'],
    [
      ['--payload', '{"text":"x"}', '--delay', '5s', '--scheduled-at', '2099-01-01T00:00:00Z'],
      '--delay and --scheduled-at are mutually exclusive',
    ],
    [
      ['--payload', '{"text":"x"}', '--idempotency-scope', 'run-1'],
      '--idempotency-scope needs --idempotency-key',
    ],
    [['--payload', '{"text":"x"}', '--queue', ''], '--queue: "" is invalid'],
    [['--payload', '{"text":"x"}', '--identity-key', ''], '--identity-key: "" is invalid'],
  ])('refuses %j: exit 2 naming the flag, nothing written', async (flags, message) => {
    const r = await run('cli_echo', '--module', ACTORS, ...flags);
    expect(r.code).toBe(2);
    expect(r.err).toContain(`taskq: ${message}`);
    expect(await jobCount()).toBe(0);
  });

  it('exits 2 on a schema that is not migrated', async () => {
    const stderr: string[] = [];
    const code = await runCli(
      ['jobs', 'enqueue', 'cli_echo', '--module', ACTORS, '--payload', '{"text":"x"}'],
      {
        out: () => undefined,
        err: (l) => stderr.push(l),
        env: { TASKQ_PG_DSN: TEST_DSN, TASKQ_SCHEMA_NAME: uniqueSchemaName('clienq_none') },
      },
    );
    expect(code, stderr.join('\n')).toBe(2);
    expect(stderr.join('\n')).toMatch(/migrat/i);
  });
});
