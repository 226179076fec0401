import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { CliIo } from '../../src/cli/io.js';
import { runCli } from '../../src/cli/main.js';
import { formatTable } from '../../src/cli/schedules-command.js';
import { TaskQ } from '../../src/client/taskq.js';
import { silentLogger } from '../../src/obs/logger.js';
import { Worker } from '../../src/worker/worker.js';
import { note, SCHEDULED_QUEUE } from '../fixtures/cli/scheduled.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';
import { testWorkerSettings } from '../helpers/in-process-worker.js';
import { waitFor } from '../helpers/wait.js';

let db: TestSchema;
beforeAll(async () => {
  db = await migratedSchema('clisched');
});
afterAll(async () => {
  await db.drop();
});

async function run(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const io: CliIo = {
    out: (l) => stdout.push(l),
    err: (l) => stderr.push(l),
    env: { TASKQ_PG_DSN: TEST_DSN, TASKQ_SCHEMA_NAME: db.schema },
  };
  const code = await runCli(['schedules', ...argv], io);
  return { code, out: stdout.join('\n'), err: stderr.join('\n') };
}

/** `run` for a command that prints JSON: exit 0, stdout parsed. */
async function runJson<T = Record<string, unknown>>(...argv: string[]): Promise<T> {
  const r = await run(...argv, '--json');
  expect(r.code, r.err).toBe(0);
  return JSON.parse(r.out) as T;
}

const scheduleCount = async (): Promise<number> =>
  Number((await db.pool.query(`SELECT count(*) AS n FROM "${db.schema}".cron_schedules`)).rows[0].n);

const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';

describe('taskq schedules', () => {
  it('creates schedules and lists them as an aligned table and as JSON', async () => {
    const created = await run(
      'create',
      'cli_report',
      '30 2 * * *',
      '--name',
      'nightly',
      '--timezone',
      'Europe/Berlin',
      '--dst-strategy',
      'firstof',
      '--payload',
      '{"kind":"daily"}',
      '--identity-key',
      'reports',
    );
    expect(created.code, created.err).toBe(0);
    expect(created.out).toMatch(
      /^created schedule [0-9a-f-]{36} \(actor cli_report, name nightly\): next fire \d{4}-\d\d-\d\dT\d\d:30:00\.000Z$/,
    );
    const other = await runJson(
      'create',
      'cli_cleanup',
      '@hourly',
      '--disabled',
      '--payload-factory',
      'sweep',
    );
    expect(other).toMatchObject({
      actor: 'cli_cleanup',
      name: '',
      cronExpr: '@hourly',
      timezone: 'UTC',
      dstStrategy: 'skip',
      enabled: false,
      payloadFactory: 'sweep',
      payload: null,
      consecutiveFailures: 0,
    });
    expect(other.nextFireAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:00:00\.000Z$/);

    const table = await run('list');
    expect(table.code).toBe(0);
    const lines = table.out.split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(
      /^ID\s+ACTOR\s+NAME\s+EXPRESSION\s+ZONE\s+ENABLED\s+NEXT FIRE \(UTC\)\s+FAILURES$/,
    );
    // Aligned: every column starts where its header does.
    for (const header of ['ACTOR', 'EXPRESSION', 'ZONE', 'ENABLED', 'NEXT FIRE (UTC)', 'FAILURES']) {
      const at = lines[0]!.indexOf(header);
      for (const l of lines.slice(1)) expect(l[at - 1]).toBe(' ');
      for (const l of lines.slice(1)) expect(l[at]).not.toBe(' ');
    }
    expect(lines[1]).toMatch(/cli_cleanup\s+-\s+@hourly\s+UTC\s+no\s+\S+Z\s+0$/);
    expect(lines[2]).toMatch(/cli_report\s+nightly\s+30 2 \* \* \*\s+Europe\/Berlin\s+yes\s+\S+Z\s+0$/);

    const byActor = await runJson<Record<string, unknown>[]>('list', '--actor', 'cli_report');
    expect(byActor.map((s) => s.name)).toEqual(['nightly']);
    expect(byActor[0]).toMatchObject({ payload: { kind: 'daily' }, identityKey: 'reports' });
    expect((await runJson<unknown[]>('list', '--enabled', 'false')).length).toBe(1);
    expect((await runJson<unknown[]>('list', '--enabled', 'true')).length).toBe(1);
    expect((await run('list', '--actor', 'nobody')).out).toBe('no schedule');
  });

  it('shows a schedule, previews its next slots, and updates it', async () => {
    const { id } = await runJson<{ id: string }>(
      'create',
      'cli_preview',
      '0 */6 * * *',
      '--payload',
      '{"n":1}',
    );
    const shown = await run('show', id);
    expect(shown.code).toBe(0);
    expect(shown.out).toContain(`schedule ${id}`);
    expect(shown.out).toMatch(/expression\s+0 \*\/6 \* \* \*/);
    expect(shown.out).toMatch(/payload\s+\{"n":1\}/);
    expect(shown.out).toContain('fires        none yet');
    expect(await runJson('show', id)).toMatchObject({ id, payload: { n: 1 }, fires: [] });

    const next = (await run('next', id)).out.split('\n');
    expect(next).toHaveLength(5);
    const times = next.map((t) => new Date(t).getTime());
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBe(6 * 3600_000);
    const many = await runJson<string[]>('next', id, '--count', '1000');
    expect(many).toHaveLength(1000);
    expect(many.slice(0, 5)).toEqual(next);

    // A new expression re-anchors the chain; a factory replaces the payload, and the reverse.
    const updated = await runJson('update', id, '--expression', '15 3 * * *', '--payload-factory', 'fresh');
    expect(updated).toMatchObject({ cronExpr: '15 3 * * *', payloadFactory: 'fresh', payload: null });
    expect(updated.nextFireAt).toMatch(/T03:15:00\.000Z$/);
    expect(await runJson('update', id, '--payload', '[1,2]')).toMatchObject({
      payloadFactory: null,
      payload: [1, 2],
    });
    expect(await runJson('update', id, '--clear-payload')).toMatchObject({
      payload: null,
      payloadFactory: null,
    });
    await runJson('update', id, '--payload-factory', 'again');
    expect(await runJson('update', id, '--clear-payload-factory')).toMatchObject({ payloadFactory: null });
    const plain = await run('update', id, '--expression', '@daily');
    expect(plain).toMatchObject({ code: 0 });
    expect(plain.out).toMatch(new RegExp(`^updated schedule ${id}: next fire \\S+T00:00:00\\.000Z$`));
  });

  it('disables, enables, fires now (the fire and its job are shown) and deletes idempotently', async () => {
    const { id } = await runJson<{ id: string }>(
      'create',
      'cli_note',
      '0 0 1 1 *',
      '--name',
      'fire-now',
      '--payload',
      '{"text":"now"}',
    );
    expect(await run('disable', id)).toMatchObject({ code: 0, out: `schedule ${id}: disabled` });
    expect((await run('run-now', id)).out).toContain('due now, but disabled');
    expect((await run('enable', id)).out).toMatch(new RegExp(`^schedule ${id}: enabled, next fire `));

    const worker = new Worker({
      actors: [note],
      settings: testWorkerSettings(db.schema, { queues: [SCHEDULED_QUEUE] }),
      logger: silentLogger,
    });
    await worker.start();
    const tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
    try {
      const fired = await run('run-now', id);
      expect(fired.out).toContain('due now; the leader fires it within about a second');
      const handle = (await tq.getSchedule(id))!;
      await waitFor(async () => (await handle.history()).length === 1, 20_000, 'the fire');
      const [fire] = await handle.history();
      const job = await tq.waitForTerminal(fire!.jobId, 10_000);
      expect(job.status).toBe('succeeded');

      const shown = await runJson<{ fires: { jobId: string; fireAt: string }[]; lastFiredAt: string }>(
        'show',
        id,
      );
      expect(shown.fires).toEqual([
        { jobId: fire!.jobId, fireAt: fire!.fireAt.toISOString(), firedAt: fire!.firedAt.toISOString() },
      ]);
      const text = await run('show', id, '--fires', '1');
      expect(text.out).toContain('last 1 fires (newest first):');
      expect(text.out).toContain(fire!.jobId);
    } finally {
      await tq.close();
      await worker.stop();
    }

    expect(await run('delete', id)).toMatchObject({ code: 0, out: `schedule ${id}: deleted` });
    expect(await run('delete', id)).toMatchObject({ code: 0, out: `schedule ${id}: did not exist` });
  });

  it('exits 1 naming the schedule for a well-formed id nobody has, and when (actor, name) is taken', async () => {
    for (const argv of [
      ['show', UNKNOWN_ID],
      ['enable', UNKNOWN_ID],
      ['disable', UNKNOWN_ID],
      ['run-now', UNKNOWN_ID],
      ['next', UNKNOWN_ID],
      ['update', UNKNOWN_ID, '--expression', '@daily'],
    ]) {
      const r = await run(...argv);
      expect(r, argv.join(' ')).toMatchObject({ code: 1 });
      expect(r.err).toContain(`schedule ${UNKNOWN_ID} does not exist`);
    }
    expect((await run('create', 'cli_dup', '@daily', '--name', 'x')).code).toBe(0);
    const before = await scheduleCount();
    const dup = await run('create', 'cli_dup', '@hourly', '--name', 'x');
    expect(dup.code).toBe(1);
    expect(dup.err).toContain('actor "cli_dup" already has a schedule named "x"');
    expect(await scheduleCount()).toBe(before);
  });

  it.each([
    [['create', 'a', 'every day'], '<expression>: "every day" is invalid'],
    [['create', 'a', '@daily', '--timezone', 'Mars/Base'], '--timezone: "Mars/Base" is invalid'],
    [['create', 'a', '@daily', '--dst-strategy', 'latest'], '--dst-strategy: "latest" is invalid'],
    [['create', 'a', '@daily', '--payload', '{nope'], '--payload: "{nope" is invalid: must be JSON'],
    [['create', 'a', '@daily', '--payload', '1', '--payload-factory', 'f'], 'mutually exclusive'],
    [['create', 'a', '@daily', '--payload-factory', ''], '--payload-factory: "" is invalid'],
    [['create', 'a', '@daily', '--identity-key', ''], '--identity-key: "" is invalid'],
    [['create', 'a', '@daily', '--name', 'x'.repeat(201)], '--name: '],
    [['create', '', '@daily'], '<actor>: "" is invalid'],
    [['list', '--enabled', 'yes'], '--enabled: "yes" is invalid: must be true or false'],
    [['show', 'not-a-uuid'], '<id>: "not-a-uuid" is invalid: must be a schedule id'],
    [['show', UNKNOWN_ID, '--fires', '101'], '--fires: "101" is invalid: must be an integer from 1 to 100'],
    [['next', 'nope'], '<id>: "nope" is invalid'],
    [['next', UNKNOWN_ID, '--count', '0'], '--count: "0" is invalid: must be an integer from 1 to 1000'],
    [['next', UNKNOWN_ID, '--count', '1001'], '--count: "1001" is invalid'],
    [['next', UNKNOWN_ID, '--count', 'many'], '--count: "many" is invalid'],
    [['enable', 'x'], '<id>: "x" is invalid'],
    [['disable', 'x'], '<id>: "x" is invalid'],
    [['run-now', 'x'], '<id>: "x" is invalid'],
    [['delete', 'x'], '<id>: "x" is invalid'],
    [['update', UNKNOWN_ID], 'nothing to update: give --expression'],
    [
      ['update', UNKNOWN_ID, '--payload', '1', '--clear-payload'],
      '--payload and --clear-payload are mutually exclusive',
    ],
    [
      ['update', UNKNOWN_ID, '--payload-factory', 'f', '--clear-payload-factory'],
      '--payload-factory and --clear-payload-factory are mutually exclusive',
    ],
    [['update', UNKNOWN_ID, '--payload', '1', '--payload-factory', 'f'], 'mutually exclusive'],
    [['update', 'x', '--expression', '@daily'], '<id>: "x" is invalid'],
    [['list', '--schema', 'bad schema'], '--schema'],
  ])('exits 2 for %j, naming the flag, and writes nothing', async (argv, message) => {
    const before = await scheduleCount();
    const r = await run(...argv);
    expect(r.code, r.err).toBe(2);
    expect(r.err).toContain(message);
    expect(await scheduleCount()).toBe(before);
  });

  it('exits 2 for a static payload above payloadMaxBytes, naming --payload, and writes nothing', async () => {
    const before = await scheduleCount();
    const r = await run('create', 'a', '@daily', '--payload', JSON.stringify('x'.repeat(1024 * 1024 + 1)));
    expect(r.code).toBe(2);
    expect(r.err).toContain('--payload serialises to 1048579 bytes of JSON, above payloadMaxBytes');
    expect(await scheduleCount()).toBe(before);
  });

  it('rejects a bad expression given to update, naming --expression, and changes nothing', async () => {
    const { id, nextFireAt } = await runJson<{ id: string; nextFireAt: string }>(
      'create',
      'cli_upd',
      '@daily',
    );
    const r = await run('update', id, '--expression', '61 * * * *');
    expect(r.code).toBe(2);
    expect(r.err).toContain('--expression: "61 * * * *" is invalid');
    expect(await runJson('show', id)).toMatchObject({ cronExpr: '@daily', nextFireAt });
  });
});

describe('formatTable', () => {
  it('pads every column but the last to its widest cell', () => {
    expect(formatTable(['A', 'BB', 'C'], [['xxx', 'y', 'zzzz']])).toEqual(['A    BB  C', 'xxx  y   zzzz']);
  });
});
