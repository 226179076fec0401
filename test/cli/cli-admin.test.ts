import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { runCli } from '../../src/cli/main.js';
import type { CliIo } from '../../src/cli/io.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';

let db: TestSchema;
beforeAll(async () => {
  db = await migratedSchema('cliadm');
  await db.pool.query(`INSERT INTO "${db.schema}".actor_config (actor, queue) VALUES ('mailer', 'emails')`);
});
afterAll(async () => {
  await db.drop();
});

function io(): CliIo & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return {
    stdout,
    stderr,
    out: (l) => stdout.push(l),
    err: (l) => stderr.push(l),
    env: { TASKQ_PG_DSN: TEST_DSN, TASKQ_SCHEMA_NAME: db.schema },
  };
}

async function run(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const x = io();
  const code = await runCli(argv, x);
  return { code, out: x.stdout.join('\n'), err: x.stderr.join('\n') };
}

describe('taskq queues', () => {
  it('sets modes and caps with upserts, and lists them', async () => {
    expect((await run('queues', 'list')).out).toContain('no queue: no job, no configured queue');
    expect(await run('queues', 'set-mode', 'emails', 'round_robin')).toMatchObject({
      code: 0,
      out: 'queue emails: mode round_robin',
    });
    expect((await run('queues', 'set-max-concurrent', 'emails', '--max-concurrent', '5')).code).toBe(0);
    expect((await run('queues', 'list')).out).toMatch(/emails\s+round_robin\s+5\s+0\s+0\s+0\s+-\s+0/);
    expect((await run('queues', 'set-max-concurrent', 'emails', '--clear')).out).toContain(
      'max-concurrent none',
    );
    const row = await db.pool.query(
      `SELECT mode, max_concurrent FROM "${db.schema}".queues WHERE name = 'emails'`,
    );
    expect(row.rows[0]).toEqual({ mode: 'round_robin', max_concurrent: null });
  });

  it.each([
    [['queues', 'set-mode', 'emails', 'random'], 'must be strict_fifo or round_robin'],
    [['queues', 'set-max-concurrent', 'emails', '--max-concurrent', '0'], 'must be an integer >= 1'],
    [['queues', 'set-max-concurrent', 'emails', '--max-concurrent', 'x'], 'must be an integer >= 1'],
    [['queues', 'set-max-concurrent', 'emails'], 'give --max-concurrent N or --clear'],
    [['queues', 'set-max-concurrent', 'emails', '--max-concurrent', '3', '--clear'], 'mutually exclusive'],
    [['queues', 'set-mode', 'bad queue', 'round_robin'], 'queue: "bad queue" is invalid'],
  ])('rejects %j', async (argv, message) => {
    const r = await run(...argv);
    expect(r.code).toBeGreaterThan(0);
    expect(r.err).toContain(message);
  });
});

describe('taskq actor-config', () => {
  it('stores, lists and clears operator-owned capacity', async () => {
    const set = await run(
      'actor-config',
      'set',
      'mailer',
      '--max-pending',
      '100',
      '--max-concurrent',
      '4',
      '--result-ttl',
      '1h',
    );
    expect(set).toMatchObject({
      code: 0,
      out: 'actor mailer: max-concurrent 4 max-pending 100 result-ttl 3600000ms',
    });
    expect((await run('actor-config', 'list')).out).toMatch(
      /mailer\s+queue emails\s+max-concurrent 4 max-pending 100/,
    );
    expect((await run('actor-config', 'set', 'mailer', '--clear-max-pending')).out).toContain(
      'max-pending -',
    );
    const row = await db.pool.query(
      `SELECT max_concurrent, max_pending FROM "${db.schema}".actor_config WHERE actor = 'mailer'`,
    );
    expect(row.rows[0]).toEqual({ max_concurrent: 4, max_pending: null });
  });

  it('refuses unknown actors and bad values', async () => {
    expect(await run('actor-config', 'set', 'ghost', '--max-pending', '1')).toMatchObject({ code: 1 });
    expect((await run('actor-config', 'set', 'mailer', '--max-pending', '-1')).err).toContain(
      'must be an integer >= 0',
    );
    expect((await run('actor-config', 'set', 'mailer', '--result-ttl', 'soon')).err).toContain('resultTtl');
    expect((await run('actor-config', 'set', 'mailer')).err).toContain('nothing to set');
  });
});

describe('taskq actor-config deregister', () => {
  it('removes the row and prints what it did; refusals exit 1 with the pointed message, bad input 2', async () => {
    const s = `"${db.schema}"`;
    await db.pool.query(`INSERT INTO ${s}.actor_config (actor, queue) VALUES ('cli_gone', 'cli_gone_q')`);
    await db.pool.query(`INSERT INTO ${s}.queues (name, mode) VALUES ('cli_gone_q', 'round_robin')`);
    await db.pool.query(
      `INSERT INTO ${s}.jobs (id, actor, queue, payload, status, max_attempts, retry_kind, scheduled_at, created_at)
       VALUES ('019f0000-0000-7000-8000-000000000001', 'cli_gone', 'cli_gone_q', '{}', 'pending', 3, 'transient',
               now(), now())`,
    );
    const refused = await run('actor-config', 'deregister', 'cli_gone');
    expect(refused.code).toBe(1);
    expect(refused.err).toContain('1 non-terminal job(s) still reference this actor');
    expect(refused.err).toContain('--force');

    const done = await run('actor-config', 'deregister', 'cli_gone', '--force', '--purge-queue');
    expect(done).toMatchObject({
      code: 0,
      out: 'actor cli_gone deregistered (queue cli_gone_q): jobs cancelled 1, schedules disabled 0, terminal jobs remaining 1, queue row purged yes',
    });
    expect((await db.pool.query(`SELECT 1 FROM ${s}.actor_config WHERE actor = 'cli_gone'`)).rowCount).toBe(
      0,
    );

    const missing = await run('actor-config', 'deregister', 'cli_gone');
    expect(missing.code).toBe(1);
    expect(missing.err).toContain('no stored actor_config row');

    const bad = await run('actor-config', 'deregister', 'bad actor');
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('actor: "bad actor" is invalid');
  });
});
