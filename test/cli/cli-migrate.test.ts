import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';

import { runCli } from '../../src/cli/main.js';
import type { CliIo } from '../../src/cli/io.js';
import { TaskQ } from '../../src/client/taskq.js';
import { plain } from '../helpers/actors.js';
import { TEST_DSN, uniqueSchemaName } from '../helpers/db.js';

const exec = promisify(execFile);
const pool = new pg.Pool({ connectionString: TEST_DSN, max: 2 });
const created: string[] = [];
afterAll(async () => {
  for (const s of created) await pool.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  await pool.end();
});

function io(env: NodeJS.ProcessEnv = {}): CliIo & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return { stdout, stderr, out: (l) => stdout.push(l), err: (l) => stderr.push(l), env };
}

describe('taskq migrate', () => {
  it('up, status and sql work in-process, and up is idempotent', async () => {
    const s = uniqueSchemaName('cli');
    created.push(s);
    const a = io({ TASKQ_PG_DSN: TEST_DSN });
    expect(await runCli(['migrate', 'up', '--schema', s], a)).toBe(0);
    expect(a.stdout.join('\n')).toContain(`schema ${s}: applied 0001_pre_initial`);
    const b = io({ TASKQ_PG_DSN: TEST_DSN });
    expect(await runCli(['migrate', 'up', '--schema', s], b)).toBe(0);
    expect(b.stdout).toEqual([`schema ${s}: up to date`]);
    const c = io({ TASKQ_PG_DSN: TEST_DSN, TASKQ_SCHEMA_NAME: s });
    expect(await runCli(['migrate', 'status'], c)).toBe(0);
    expect(c.stdout.join('\n')).toMatch(/0001_pre_initial\s+pre\s+applied/);
    const d = io();
    expect(await runCli(['migrate', 'sql', '--schema', 'rendered_here'], d)).toBe(0);
    expect(d.stdout.join('\n')).toContain('CREATE TABLE "rendered_here".jobs');
  });

  it('warns on stderr about a TASKQ_* variable it does not read, and goes on with the default', async () => {
    const cli = io({ TASKQ_PG_DSN: TEST_DSN, TASKQ_SCHEMA: 'mine' });
    expect(await runCli(['migrate', 'sql'], cli)).toBe(0);
    expect(cli.stderr).toEqual([
      'taskq: warning: TASKQ_SCHEMA is not a TaskQ setting and is ignored (did you mean TASKQ_SCHEMA_NAME?)',
    ]);
    expect(cli.stdout.join('\n')).toContain('CREATE TABLE "taskq".jobs');
    // The variables TaskQ reads, a worker's included, pass without a word.
    const quiet = io({
      TASKQ_PG_DSN: TEST_DSN,
      TASKQ_SCHEMA_NAME: 'mine',
      TASKQ_QUEUES: 'a',
      TASKQ_DEV_DATA_DIR: '.x',
    });
    expect(await runCli(['migrate', 'sql'], quiet)).toBe(0);
    expect(quiet.stderr).toEqual([]);
  });

  it('fails with a clear message and exit code on bad input', async () => {
    const noDsn = io();
    expect(await runCli(['migrate', 'up'], noDsn)).toBe(2);
    expect(noDsn.stderr.join('\n')).toContain('TASKQ_PG_DSN');
    const badSchema = io({ TASKQ_PG_DSN: TEST_DSN });
    expect(await runCli(['migrate', 'up', '--schema', 'bad;name'], badSchema)).toBe(2);
    expect(badSchema.stderr.join('\n')).toContain('--schema: "bad;name" is invalid');
    const badPhase = io({ TASKQ_PG_DSN: TEST_DSN });
    expect(await runCli(['migrate', 'up', '--phase', 'middle'], badPhase)).toBe(2);
    expect(badPhase.stderr.join('\n')).toContain('--phase');
    const unknown = io();
    expect(await runCli(['migrate', 'sideways'], unknown)).toBe(2);
  });

  it('imports the credential provider TASKQ_PG_CREDENTIAL_PROVIDER names, exiting 1 when it cannot', async () => {
    const cli = io({ TASKQ_PG_DSN: TEST_DSN, TASKQ_PG_CREDENTIAL_PROVIDER: 'myapp.auth:make_provider' });
    expect(await runCli(['migrate', 'status'], cli)).toBe(1);
    expect(cli.stderr.join('\n')).toMatch(
      /TASKQ_PG_CREDENTIAL_PROVIDER = "myapp.auth:make_provider": module "myapp.auth" not found/,
    );
  });

  it('gives two isolated installations in one database (subprocess)', async () => {
    const tenantA = uniqueSchemaName('tenant_a');
    const tenantB = uniqueSchemaName('tenant_b');
    created.push(tenantA, tenantB);
    for (const s of [tenantA, tenantB]) {
      const { stdout } = await exec(
        'npx',
        ['tsx', 'src/cli/bin.ts', 'migrate', 'up', '--schema', s, '--dsn', TEST_DSN],
        { cwd: process.cwd() },
      );
      expect(stdout).toContain(`schema ${s}: applied`);
    }
    const a = await TaskQ.open({ dsn: TEST_DSN, schema: tenantA });
    const b = await TaskQ.open({ dsn: TEST_DSN, schema: tenantB });
    try {
      const job = await a.enqueue(plain, { n: 1 }, { idempotencyKey: 'same-key' });
      const jobB = await b.enqueue(plain, { n: 2 }, { idempotencyKey: 'same-key' });
      expect(jobB.wasExisting).toBe(false);
      expect((await a.list()).jobs.map((j) => j.id)).toEqual([job.jobId]);
      expect((await b.list()).jobs.map((j) => j.id)).toEqual([jobB.jobId]);
      expect(await b.getRow(job.jobId)).toBeNull();
    } finally {
      await a.close();
      await b.close();
    }
  });
});
