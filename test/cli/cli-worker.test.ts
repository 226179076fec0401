import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { CliIo } from '../../src/cli/io.js';
import { runCli } from '../../src/cli/main.js';
import { loadActorModule } from '../../src/cli/worker-command.js';
import { TaskQ } from '../../src/client/taskq.js';
import { actor } from '../../src/core/actor.js';
import { cron } from '../../src/cron/cron-declaration.js';
import { echo, FIXTURE_QUEUE, sum } from '../fixtures/cli/actors.js';
import { note, SCHEDULED_QUEUE, yearly } from '../fixtures/cli/scheduled.js';
import { greet } from '../fixtures/cli/injected.js';
import { cleanEnv, runTsx } from '../fixtures/cli/run-cli-process.js';
import { migratedSchema, TEST_DSN, uniqueSchemaName, type TestSchema } from '../helpers/db.js';

const FIXTURES = 'test/fixtures/cli';

function io(env: NodeJS.ProcessEnv = {}): CliIo & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return { stdout, stderr, out: (l) => stdout.push(l), err: (l) => stderr.push(l), env };
}

/** Runs `taskq worker ...` in-process; returns the exit code and everything written to stderr. */
async function worker(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; err: string }> {
  const cli = io(env);
  const code = await runCli(['worker', ...args], cli);
  return { code, err: cli.stderr.join('\n') };
}

describe('taskq worker: bad input exits 2 and names the problem', () => {
  it('refuses to start without --module', async () => {
    const r = await worker([], { TASKQ_PG_DSN: TEST_DSN });
    expect(r.code).toBe(2);
    expect(r.err).toContain('pass --module');
  });

  it('refuses a module file that does not exist', async () => {
    const r = await worker(['--module', `${FIXTURES}/missing.ts`], { TASKQ_PG_DSN: TEST_DSN });
    expect(r.code).toBe(2);
    expect(r.err).toContain(`--module ${FIXTURES}/missing.ts: no such file`);
  });

  it('refuses a module that exports no actors', async () => {
    const r = await worker(['--module', `${FIXTURES}/no-actors.ts`], { TASKQ_PG_DSN: TEST_DSN });
    expect(r.code).toBe(2);
    expect(r.err).toContain(`--module ${FIXTURES}/no-actors.ts: no actors found`);
    expect(r.err).toContain('export default [');
  });

  it('refuses a module with two different actors of one name', async () => {
    const r = await worker(['--module', `${FIXTURES}/duplicate-names.ts`], { TASKQ_PG_DSN: TEST_DSN });
    expect(r.code).toBe(2);
    expect(r.err).toContain('first and second are two different actors named "cli_twin"');
  });

  it('rejects a bad --concurrency, naming the flag', async () => {
    const text = await worker(['--module', `${FIXTURES}/actors.ts`, '--concurrency', 'lots'], {
      TASKQ_PG_DSN: TEST_DSN,
    });
    expect(text.code).toBe(2);
    expect(text.err).toMatch(/--concurrency = "lots": .*integer/);
    const zero = await worker(['--module', `${FIXTURES}/actors.ts`, '--concurrency', '0'], {
      TASKQ_PG_DSN: TEST_DSN,
    });
    expect(zero.code).toBe(2);
    expect(zero.err).toMatch(/--concurrency = 0: /);
  });

  it('rejects a stray comma in --queues', async () => {
    const r = await worker(['--module', `${FIXTURES}/actors.ts`, '--queues', 'a,,b'], {
      TASKQ_PG_DSN: TEST_DSN,
    });
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--queues = .*stray comma/);
  });

  it('says how to get a database when no DSN is configured', async () => {
    const r = await worker(['--module', `${FIXTURES}/actors.ts`]);
    expect(r.code).toBe(2);
    expect(r.err).toContain('set TASKQ_PG_DSN');
    expect(r.err).toContain('taskq dev');
  });

  it('refuses a setting that is not available yet, naming it, its variable and what it waits for', async () => {
    const r = await worker(['--module', `${FIXTURES}/actors.ts`], {
      TASKQ_PG_DSN: TEST_DSN,
      TASKQ_WORKGROUP_INSTANCE: '00000000-0000-4000-8000-000000000000',
    });
    expect(r.code).toBe(2);
    expect(r.err).toMatch(
      /TASKQ_WORKGROUP_INSTANCE = "00000000-0000-4000-8000-000000000000": workgroupInstance \(.*TASKQ_WORKGROUP_INSTANCE\) is not available yet: .*later release/,
    );
  });

  it('lists every bad TASKQ_ variable, each on its own line', async () => {
    const r = await worker(['--module', `${FIXTURES}/actors.ts`], {
      TASKQ_PG_DSN: TEST_DSN,
      TASKQ_LOCK_LEASE: 'soon',
      TASKQ_MAX_CONCURRENCY: '-3',
    });
    expect(r.code).toBe(2);
    const lines = r.err.split('\n');
    expect(lines[0]).toContain('Invalid worker settings (2 problems)');
    expect(lines.some((l) => /^\s+- TASKQ_LOCK_LEASE = "soon": /.test(l))).toBe(true);
    expect(lines.some((l) => /^\s+- TASKQ_MAX_CONCURRENCY = "-3": /.test(l))).toBe(true);
  });

  it('tells the user to migrate when the schema has no TaskQ tables', async () => {
    const schema = uniqueSchemaName('cli_unmigrated');
    const r = await worker(
      ['--module', `${FIXTURES}/actors.ts`, '--dsn', TEST_DSN, '--schema', schema, '--queues', FIXTURE_QUEUE],
      { TASKQ_LOG_LEVEL: 'silent' },
    );
    expect(r.code).toBe(2);
    expect(r.err).toContain(`migrate up --schema ${schema}`);
  });
});

describe('taskq worker: rate limits', () => {
  let db: TestSchema;
  beforeAll(async () => {
    db = await migratedSchema('cli_rl');
  });
  afterAll(async () => {
    await db.drop();
  });

  it('resolves names in the exported registry and refuses (exit 2) a name nothing provides', async () => {
    const loaded = await loadActorModule(`${FIXTURES}/rate-limited.ts`, io());
    expect(loaded.rateLimitRegistry?.hasRateLimit('cli-known')).toBe(true);
    const r = await worker(
      [
        '--module',
        `${FIXTURES}/rate-limited.ts`,
        '--dsn',
        TEST_DSN,
        '--schema',
        db.schema,
        '--queues',
        'cli_rl',
      ],
      { TASKQ_LOG_LEVEL: 'silent' },
    );
    expect(r.code).toBe(2);
    expect(r.err).toContain('actor "cli_limited" names rate limit "cli-unknown"');
    expect(r.err).not.toContain('cli-known"');
  });
});

describe('taskq worker: dependency providers in the module', () => {
  let db: TestSchema;
  beforeAll(async () => {
    db = await migratedSchema('cli_di');
  });
  afterAll(async () => {
    await db.drop();
  });

  it('hands the exported Providers to the worker: injecting actors run', async () => {
    const loaded = await loadActorModule(`${FIXTURES}/injected.ts`, io());
    expect(loaded.providers).toBeDefined();
    const tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
    try {
      const a = await tq.enqueue(greet, { who: 'ada' });
      const b = await tq.enqueue(greet, { who: 'bob' });
      const r = await runTsx(
        'src/cli/bin.ts',
        [
          'worker',
          '--module',
          `${FIXTURES}/injected.ts`,
          '--until-idle',
          '--dsn',
          TEST_DSN,
          '--schema',
          db.schema,
          '--queues',
          'cli_di',
          '--concurrency',
          '1',
        ],
        {
          env: cleanEnv({
            TASKQ_LOG_LEVEL: 'warn',
            TASKQ_IDLE_SETTLE_WINDOW: '300ms',
            TASKQ_IDLE_POLL_INTERVAL: '100ms',
            TASKQ_IDLE_MAX_RUNTIME: '20s',
          }),
        },
      );
      expect(r.code, `stdout:\n${r.stdout}\nstderr:\n${r.stderr}`).toBe(0);
      // One worker-scoped counter, shared by both jobs.
      const results = [await a.wait({ timeout: '1s' }), await b.wait({ timeout: '1s' })].sort();
      expect(results).toEqual(['hello, ada (1)', 'hello, bob (2)']);
    } finally {
      await tq.close();
    }
  });

  it('refuses to start (exit 2) when nothing provides what an actor injects, naming both', async () => {
    const r = await worker(
      ['--module', `${FIXTURES}/injected-unprovided.ts`, '--dsn', TEST_DSN, '--schema', db.schema],
      { TASKQ_LOG_LEVEL: 'silent' },
    );
    expect(r.code).toBe(2);
    expect(r.err).toContain('Greeting');
    expect(r.err).toContain('cli_greet');
  });
});

describe('loadActorModule', () => {
  it('takes every actor export and skips look-alikes', async () => {
    const { actors } = await loadActorModule(`${FIXTURES}/actors.ts`, io());
    expect(actors.map((a) => a.name).sort()).toEqual(['cli_echo', 'cli_sum']);
  });

  it('takes only the default export when it is an array of actors', async () => {
    const { actors } = await loadActorModule(`${FIXTURES}/default-array.ts`, io());
    expect(actors.map((a) => a.name)).toEqual(['cli_echo']);
  });
});

describe('taskq worker (subprocess, real Postgres)', () => {
  let db: TestSchema;
  beforeAll(async () => {
    db = await migratedSchema('cli_worker');
  });
  afterAll(async () => {
    await db.drop();
  });

  it('runs the enqueued jobs with --until-idle and exits 0', async () => {
    const tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
    try {
      const handles = [
        await tq.enqueue(echo, { text: 'one' }),
        await tq.enqueue(echo, { text: 'two' }),
        await tq.enqueue(sum, { values: [1, 2, 3, 4] }),
      ];
      const r = await runTsx(
        'src/cli/bin.ts',
        [
          'worker',
          '--module',
          `${FIXTURES}/actors.ts`,
          '--until-idle',
          '--dsn',
          TEST_DSN,
          '--schema',
          db.schema,
          '--queues',
          FIXTURE_QUEUE,
          '--concurrency',
          '2',
        ],
        {
          env: cleanEnv({
            TASKQ_LOG_LEVEL: 'warn',
            TASKQ_IDLE_SETTLE_WINDOW: '300ms',
            TASKQ_IDLE_POLL_INTERVAL: '100ms',
            // A bound, so a worker that never sees its queues idle fails (exit 4) instead of hanging.
            TASKQ_IDLE_MAX_RUNTIME: '20s',
          }),
        },
      );
      expect(r.code, `stdout:\n${r.stdout}\nstderr:\n${r.stderr}`).toBe(0);
      for (const h of handles) expect(await h.status()).toBe('succeeded');
      expect(await handles[0]!.wait({ timeout: '1s' })).toEqual({ echoed: 'one' });
      expect(await handles[2]!.wait({ timeout: '1s' })).toBe(10);
    } finally {
      await tq.close();
    }
  });
});

describe('taskq worker: cron() declarations and payload factories in the module', () => {
  /** `loadActorModule` over an in-memory module (the file only has to exist). */
  const loadExports = (exports: Record<string, unknown>): ReturnType<typeof loadActorModule> =>
    loadActorModule(`${FIXTURES}/no-actors.ts`, io(), { importModule: () => Promise.resolve(exports) });

  it('finds exported declarations (also inside arrays, each once) and the payloadFactories export', async () => {
    const loaded = await loadActorModule(`${FIXTURES}/scheduled.ts`, io());
    expect(loaded.actors.map((a) => a.name)).toEqual(['cli_note']);
    expect(loaded.schedules.map((d) => `${d.actor.name}/${d.name}`).sort()).toEqual([
      'cli_note/berlin',
      'cli_note/yearly',
    ]);
    expect(Object.keys(loaded.payloadFactories)).toEqual(['greeting']);
    const plain = await loadActorModule(`${FIXTURES}/actors.ts`, io());
    expect(plain.schedules).toEqual([]);
    expect(plain.payloadFactories).toEqual({});
  });

  it('takes declarations listed in a default array of actors', async () => {
    const loaded = await loadExports({ default: [note, yearly] });
    expect(loaded.actors).toEqual([note]);
    expect(loaded.schedules).toEqual([yearly]);
  });

  it.each([
    [
      'a declaration of an actor the module does not export',
      { echo, yearly },
      'export yearly schedules actor "cli_note", which the module does not export as an actor',
    ],
    [
      'two declarations of one (actor, name)',
      { note, yearly, again: cron('@daily', note, { name: 'yearly', payload: { text: 'x' } }) },
      'exports yearly and again are two schedules of actor "cli_note" named "yearly"',
    ],
    [
      'a payloadFactories export that is not an object',
      { note, payloadFactories: [() => 1] },
      'export payloadFactories must be an object of functions by name',
    ],
    [
      'a payload factory that is not a function',
      { note, payloadFactories: { ok: () => 1, broken: 'nope' } },
      'payloadFactories.broken is not a function',
    ],
    [
      'a default array item that is neither an actor nor a declaration',
      { default: [note, 42] },
      'item 1 is neither an actor declared with actor() nor a schedule declared with cron()',
    ],
  ])('refuses %s (exit 2)', async (_what, exports, message) => {
    const err = await loadExports(exports).catch((e: unknown) => e);
    expect(err).toMatchObject({ exitCode: 2 });
    expect((err as Error).message).toContain(message);
  });

  it('refuses an actor the module exports under another definition than its declaration names', async () => {
    const twin = actor({ name: 'cli_note', queue: SCHEDULED_QUEUE }, async () => undefined);
    const err = await loadExports({ twin, yearly }).catch((e: unknown) => e);
    expect(err).toMatchObject({ exitCode: 2 });
    expect((err as Error).message).toContain('export yearly schedules actor "cli_note"');
  });

  describe('with a database', () => {
    let db: TestSchema;
    beforeAll(async () => {
      db = await migratedSchema('cli_cron');
    });
    afterAll(async () => {
      await db.drop();
    });

    it('creates the declared schedules at start and fires a run-time schedule with an exported factory', async () => {
      const tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
      try {
        const made = await tq.createSchedule('cli_note', '0 0 1 1 *', {
          name: 'made-at-run-time',
          payloadFactory: 'greeting',
        });
        await made.runNow();
        const r = await worker(
          [
            '--module',
            `${FIXTURES}/scheduled.ts`,
            '--until-idle',
            '--dsn',
            TEST_DSN,
            '--schema',
            db.schema,
            '--queues',
            SCHEDULED_QUEUE,
          ],
          {
            TASKQ_LOG_LEVEL: 'silent',
            // Long enough for the leader's first cron tick (about a second) to fire the due schedule.
            TASKQ_IDLE_SETTLE_WINDOW: '3s',
            TASKQ_IDLE_POLL_INTERVAL: '100ms',
            TASKQ_IDLE_MAX_RUNTIME: '30s',
            TASKQ_HEALTH_ENABLED: 'false',
            TASKQ_WATCHDOG_ENABLED: 'false',
          },
        );
        expect(r.code, r.err).toBe(0);
        const stored = await tq.listSchedules({ actor: 'cli_note' });
        expect(stored.map((s) => s.name).sort()).toEqual(['berlin', 'made-at-run-time', 'yearly']);
        expect(stored.find((s) => s.name === 'berlin')).toMatchObject({
          timezone: 'Europe/Berlin',
          staticPayload: { text: 'prost' },
        });
        const [fire] = await made.history();
        expect(fire).toBeDefined();
        const job = await tq.waitForTerminal(fire!.jobId, 10_000);
        expect(job.status).toBe('succeeded');
        expect(job.payload).toEqual({ text: `made-at-run-time at ${fire!.fireAt.toISOString()}` });
      } finally {
        await tq.close();
      }
    });
  });
});
