import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import type { CliIo } from '../../src/cli/io.js';
import { runCli } from '../../src/cli/main.js';
import { TaskQ } from '../../src/client/taskq.js';
import { PgliteDriver } from '../../src/db/pglite-driver.js';
import { FIXTURE_QUEUE } from '../fixtures/cli/actors.js';
import { cleanEnv, runTsx, type ProcessResult } from '../fixtures/cli/run-cli-process.js';
import { TEST_DSN, uniqueSchemaName } from '../helpers/db.js';

const temps: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'taskq-demo-test-'));
  temps.push(dir);
  return dir;
}
afterAll(() => {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

function explain(r: ProcessResult): string {
  return `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
}

/** The lines every complete demo run prints (jobs finish in any order). */
function expectDemoOutput(stdout: string): void {
  expect(stdout).toContain('TaskQ demo on an embedded Postgres (PGlite)');
  expect(stdout).toMatch(/refused at enqueue, nothing written: greet\(\{ name: 42 \}\)/);
  expect(stdout).toMatch(/✓ greet\s+succeeded\s+attempts 1\s+→ "Hello, Ada!"/);
  expect(stdout).toMatch(/✓ add\s+succeeded\s+attempts 1\s+→ \{"sum":5\}/);
  expect(stdout).toMatch(/✓ fetch_rates\s+succeeded\s+attempts 2 .*failed → succeeded/);
  expect(stdout).toMatch(/✓ export_report\s+succeeded\s+.*"report q3 exported"/);
  expect(stdout).toMatch(/✓ send_reminder\s+succeeded\s+attempts 1/);
  expect(stdout).toMatch(/✗ charge_card\s+failed\s+attempts 1\s+→ CardDeclined: card declined/);
  expect(stdout).toMatch(
    /summary: 6 jobs, 5 succeeded, 1 failed, [\d.]+ s after the first enqueue \(all as intended/,
  );
  expect(stdout).toMatch(/worker stopped cleanly in [\d.]+ s/);
}

/**
 * Each run starts an embedded (WASM) Postgres and migrates it: ~8 s alone, and more than the
 * helper's default 25 s once in a while when the whole suite shares the two cores.
 */
const SUBPROCESS_TIMEOUT_MS = 60_000;

describe('npm run demo (subprocess, embedded Postgres)', { timeout: 90_000 }, () => {
  it('runs the sample jobs, prints each result and a summary, and exits 0', async () => {
    const dataDir = join(tempDir(), 'data');
    const r = await runTsx('examples/demo/run.ts', [], {
      env: cleanEnv({ TASKQ_DEV_DATA_DIR: dataDir }),
      timeoutMs: SUBPROCESS_TIMEOUT_MS,
    });
    expect(r.code, explain(r)).toBe(0);
    expectDemoOutput(r.stdout);
    expect(r.stdout).toContain(`in ${dataDir}, schema taskq_demo`);
    expect(r.stderr).not.toContain('[worker');
  });
});

describe('taskq dev (subprocess, embedded Postgres)', { timeout: 90_000 }, () => {
  it('without --module runs the demo in ./.taskq-dev of the current directory', async () => {
    const cwd = tempDir();
    const r = await runTsx('src/cli/bin.ts', ['dev'], {
      env: cleanEnv(),
      cwd,
      timeoutMs: SUBPROCESS_TIMEOUT_MS,
    });
    expect(r.code, explain(r)).toBe(0);
    expectDemoOutput(r.stdout);
    expect(existsSync(join(cwd, '.taskq-dev'))).toBe(true);
  });

  it('with --module migrates the embedded database, seeds it, and drains it with --until-idle', async () => {
    const dataDir = join(tempDir(), 'dev-data');
    const r = await runTsx(
      'src/cli/bin.ts',
      ['dev', '--module', 'test/fixtures/cli/dev-seeded.ts', '--data-dir', dataDir, '--until-idle'],
      {
        env: cleanEnv({
          TASKQ_LOG_LEVEL: 'warn',
          TASKQ_IDLE_SETTLE_WINDOW: '300ms',
          TASKQ_IDLE_POLL_INTERVAL: '100ms',
          TASKQ_IDLE_MAX_RUNTIME: '20s',
        }),
        timeoutMs: SUBPROCESS_TIMEOUT_MS,
      },
    );
    expect(r.code, explain(r)).toBe(0);
    expect(r.stdout).toContain('taskq dev: schema taskq: applied 0001_pre_initial');
    expect(r.stdout).toContain(`actors cli_echo, cli_sum on queues ${FIXTURE_QUEUE}; embedded Postgres`);

    // The process has exited, so the embedded database can be opened here to check the jobs.
    const tq = await TaskQ.open({ driver: await PgliteDriver.open(dataDir) });
    try {
      const { jobs } = await tq.list({ queue: FIXTURE_QUEUE });
      expect(jobs.map((j) => [j.actor, j.status, j.result]).sort()).toEqual([
        ['cli_echo', 'succeeded', { echoed: 'from seedJobs' }],
        ['cli_sum', 'succeeded', 30],
        ['cli_sum', 'succeeded', 6],
      ]);
    } finally {
      await tq.close();
    }
  });
});

describe('taskq dev with TASKQ_PG_DSN (in-process)', () => {
  it('asks for `taskq migrate up` when the schema is not migrated', async () => {
    const schema = uniqueSchemaName('dev_unmigrated');
    const stderr: string[] = [];
    const io: CliIo = {
      out: () => undefined,
      err: (l) => stderr.push(l),
      env: { TASKQ_PG_DSN: TEST_DSN, TASKQ_SCHEMA_NAME: schema, TASKQ_LOG_LEVEL: 'silent' },
    };
    expect(await runCli(['dev', '--module', 'test/fixtures/cli/actors.ts'], io)).toBe(2);
    expect(stderr.join('\n')).toContain(`run \`taskq migrate up --schema ${schema}\` first`);
  });
});
