import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { CliIo } from '../../src/cli/io.js';
import { runCli } from '../../src/cli/main.js';
import { loadActorModule } from '../../src/cli/worker-command.js';
import { TaskQ } from '../../src/client/taskq.js';
import { echo, FIXTURE_QUEUE, sum } from '../fixtures/cli/actors.js';
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
      TASKQ_CRON_CATCH_UP_WINDOW: '2h',
    });
    expect(r.code).toBe(2);
    expect(r.err).toMatch(
      /TASKQ_CRON_CATCH_UP_WINDOW = "2h": cronCatchUpWindow \(cronCatchUpWindowMs, TASKQ_CRON_CATCH_UP_WINDOW\) is not available yet: cron schedules arrive in a later release/,
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
