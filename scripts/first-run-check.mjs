#!/usr/bin/env node
// What a new user does, checked: build and pack TaskQ, install the tarball into an empty
// `npm init -y` project, follow the README's Quick start literally (once as ES modules, once as
// CommonJS) against a real Postgres, and see the first job succeed. Then what a user meets next:
// `taskq --version`, `taskq dev` without PGlite, a TypeScript --module without and with tsx, and a
// strict `tsc` (skipLibCheck false) against the published types. Exits non-zero on any failure.
//
//   npm run check:first-run             # Postgres from TASKQ_TEST_DSN, else postgres://postgres@127.0.0.1:5432/test
//   npm run check:first-run -- --keep   # keep the temporary projects (their path is printed)
//
// The Quick start is read from README.md, between `<!-- first-run: ... -->` markers:
//   setup            the shell block run first in every project (`npm install taskq ...` installs the
//                    tarball instead of `taskq`; an `export TASKQ_PG_DSN=` line is replaced by this
//                    script's database and a schema of its own, dropped at the end)
//   file NAME        a code block saved as NAME
//   run NAME...      a shell block run in the project holding the files NAME...; it must print the
//                    enqueued job's id, and the job must have succeeded once it has run
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import pg from 'pg';

const ROOT = resolve(import.meta.dirname, '..');
const DSN = process.env.TASKQ_TEST_DSN ?? 'postgres://postgres@127.0.0.1:5432/test';
const KEEP = process.argv.includes('--keep');
const VERSION = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const MINUTE = 60_000;

class CheckFailed extends Error {}

function step(text) {
  console.log(`\n== first run: ${text}`);
}

function fail(what, result) {
  const out = result
    ? `\n--- stdout ---\n${tail(result.stdout)}\n--- stderr ---\n${tail(result.stderr)}`
    : '';
  throw new CheckFailed(`${what}${out}`);
}

function tail(text = '', lines = 60) {
  return text.split('\n').slice(-lines).join('\n');
}

/** Runs a command (no shell) and returns its result; fails the check on a non-zero exit unless `allowFail`. */
function run(cmd, args, { cwd, env, timeout = 5 * MINUTE, allowFail = false }) {
  const r = spawnSync(cmd, args, { cwd, env, encoding: 'utf8', timeout, maxBuffer: 64 * 1024 * 1024 });
  if (r.error) fail(`${cmd} ${args.join(' ')}: ${r.error.message}`, r);
  if (!allowFail && r.status !== 0) fail(`${cmd} ${args.join(' ')} exited ${r.status}`, r);
  return r;
}

/** Runs shell text with bash, stopping at the first failing command. */
function sh(text, options) {
  return run('bash', ['-euo', 'pipefail', '-c', text], options);
}

/** The README's marked blocks, in order: { marker: string[], lang, body }. */
function readmeBlocks() {
  const text = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const blocks = [];
  const re = /<!--\s*first-run:\s*([^>]*?)\s*-->\s*\n\s*```(\w*)\n([\s\S]*?)\n```/g;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    blocks.push({ marker: m[1].split(/\s+/), lang: m[2], body: m[3] });
  }
  const setup = blocks.filter((b) => b.marker[0] === 'setup');
  const runs = blocks.filter((b) => b.marker[0] === 'run');
  if (setup.length !== 1 || runs.length < 2) {
    throw new CheckFailed(
      'README.md: expected one <!-- first-run: setup --> block and a <!-- first-run: run ... --> block ' +
        `for ES modules and one for CommonJS; found ${setup.length} setup and ${runs.length} run blocks`,
    );
  }
  const files = new Map(blocks.filter((b) => b.marker[0] === 'file').map((b) => [b.marker[1], b.body]));
  return { setup: setup[0].body, runs, files };
}

/** The environment of a new user's shell: no TASKQ_* of ours, npm quiet. */
function userEnv(extra) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TASKQ_')) env[k] = v;
  return {
    ...env,
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
    ...extra,
  };
}

/** The setup block with the two lines a user adapts: the package source and the database. */
function adaptSetup(setup, tarball) {
  return setup
    .split('\n')
    .filter((line) => !/^\s*export\s+TASKQ_PG_DSN=/.test(line))
    .map((line) =>
      /^\s*npm\s+install\b/.test(line) ? line.replace(/(\s)taskq(?=\s|$)/, `$1${tarball}`) : line,
    )
    .join('\n');
}

async function jobOf(pool, schema, id) {
  const { rows } = await pool.query(`SELECT status, result FROM "${schema}".jobs WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

async function expectSucceeded(pool, schema, output, what) {
  const m = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}) (?:true|false)$/m.exec(
    output.stdout,
  );
  if (!m) fail(`${what}: no "<job id> <wasExisting>" line in the output`, output);
  const job = await jobOf(pool, schema, m[1]);
  if (job?.status !== 'succeeded')
    fail(`${what}: job ${m[1]} is ${job ? job.status : 'missing'}, not succeeded`, output);
  console.log(`job ${m[1]} succeeded with ${JSON.stringify(job.result)}`);
}

/** `cmd` must fail with exit code `code` and say `needle` on stderr. */
function expectRefusal(r, code, needle, what) {
  if (r.status !== code || !r.stderr.includes(needle)) {
    fail(`${what}: expected exit ${code} and "${needle}" on stderr, got exit ${r.status}`, r);
  }
  console.log(`${what}: ${r.stderr.trim().split('\n').at(-1)}`);
}

const TYPES_CHECK_TS = `import { z } from 'zod';
import { actor, ConnectionError, InvalidArgumentError, TaskQ } from 'taskq';
import { runWorker } from 'taskq/worker';
import { FakeClock, InMemoryBackend } from 'taskq/testing';
import { TokenBucket } from 'taskq/ratelimit';
import { adminPlugin, serveAdmin } from 'taskq/admin';

export const sendEmail = actor(
  { name: 'send_email', queue: 'emails', payload: z.object({ to: z.string().email() }) },
  async (payload, ctx) => {
    ctx.signal.throwIfAborted();
    const to: string = payload.to;
    return { sent: true, to };
  },
);

export async function enqueue(dsn: string): Promise<string> {
  const tq = await TaskQ.open({ dsn });
  try {
    const job = await tq.enqueue(sendEmail, { to: 'a@example.com' }, { idempotencyKey: 'k' });
    return job.jobId;
  } finally {
    await tq.close();
  }
}

export const badConfig = (err: unknown): boolean =>
  err instanceof InvalidArgumentError || (err instanceof ConnectionError && err.reason === 'auth-failed');

export const worker = (): Promise<number> => runWorker({ actors: [sendEmail], settings: { queues: ['emails'] } });
export const parts = [FakeClock, InMemoryBackend, TokenBucket, adminPlugin, serveAdmin] as const;
`;

async function main() {
  console.log(`first run of taskq ${VERSION} on Node.js ${process.version}`);
  const { setup, runs, files } = readmeBlocks();
  const work = mkdtempSync(join(tmpdir(), 'taskq-first-run-'));
  const pool = new pg.Pool({ connectionString: DSN, max: 2 });
  const schemas = [];
  try {
    step('npm run build');
    run('npm', ['run', 'build'], { cwd: ROOT, env: process.env });

    step('npm pack');
    const packDir = join(work, 'pack');
    mkdirSync(packDir);
    run('npm', ['pack', '--pack-destination', packDir], { cwd: ROOT, env: process.env });
    const tarball = join(
      packDir,
      readdirSync(packDir).find((f) => f.endsWith('.tgz')),
    );
    console.log(tarball);

    for (const block of runs) {
      const names = block.marker.slice(1);
      const flavour = names.some((n) => n.endsWith('.cjs')) ? 'CommonJS' : 'ES modules';
      const project = join(work, flavour === 'CommonJS' ? 'app-cjs' : 'app-esm');
      mkdirSync(project);
      const schema = `first_run_${randomBytes(4).toString('hex')}`;
      schemas.push(schema);
      const env = userEnv({ TASKQ_PG_DSN: DSN, TASKQ_SCHEMA_NAME: schema, TASKQ_IDLE_MAX_RUNTIME: '120s' });

      step(`${flavour}: npm init -y, then the README's setup (TASKQ_SCHEMA_NAME=${schema})`);
      run('npm', ['init', '-y'], { cwd: project, env });
      sh(adaptSetup(setup, tarball), { cwd: project, env, timeout: 10 * MINUTE });
      for (const name of names) {
        if (!files.has(name))
          throw new CheckFailed(`README.md: the run block names ${name}, which no file block holds`);
        writeFileSync(join(project, name), `${files.get(name)}\n`);
      }

      step(`${flavour}: the README's commands`);
      const out = sh(block.body, { cwd: project, env });
      await expectSucceeded(pool, schema, out, flavour);
      // require(esm) is unflagged and silent on the Node.js versions TaskQ supports (README).
      if (out.stderr.includes('ExperimentalWarning'))
        fail(`${flavour}: Node.js printed an ExperimentalWarning`, out);

      if (flavour !== 'ES modules') continue;

      step('taskq --version');
      const version = run('npx', ['taskq', '--version'], { cwd: project, env }).stdout.trim();
      if (version !== VERSION) fail(`taskq --version printed ${JSON.stringify(version)}, not ${VERSION}`);
      console.log(version);

      step('taskq dev without @electric-sql/pglite installed');
      const noDsn = userEnv({});
      expectRefusal(
        run('npx', ['taskq', 'dev', '--module', './actors.mjs'], {
          cwd: project,
          env: noDsn,
          allowFail: true,
        }),
        2,
        'npm install -D @electric-sql/pglite',
        'taskq dev',
      );

      step('a TypeScript --module without tsx, then with it (taskq worker and taskq dev)');
      writeFileSync(join(project, 'actors.ts'), `${files.get('actors.mjs')}\n`);
      const worker = ['taskq', 'worker', '--module', './actors.ts', '--queues', 'emails', '--until-idle'];
      const dev = ['taskq', 'dev', '--module', './actors.ts', '--until-idle'];
      for (const args of [worker, dev]) {
        const r = run('npx', args, { cwd: project, env, allowFail: true });
        expectRefusal(r, 2, 'npm install -D tsx', `taskq ${args[1]} without tsx`);
      }
      run('npm', ['install', '-D', 'tsx'], { cwd: project, env, timeout: 10 * MINUTE });
      const again = files.get('enqueue.mjs');
      for (const [i, args] of [worker, dev].entries()) {
        writeFileSync(join(project, 'enqueue-again.mjs'), again.replace("'welcome:42'", `'welcome:ts${i}'`));
        const enqueued = run('node', ['enqueue-again.mjs'], { cwd: project, env });
        run('npx', args, { cwd: project, env });
        await expectSucceeded(pool, schema, enqueued, `taskq ${args[1]} with tsx`);
      }

      step('tsc --strict --skipLibCheck false against the installed package (ESM and CommonJS files)');
      // .mts is an ES module and .cts a CommonJS one whatever the project's "type".
      writeFileSync(join(project, 'types-check.mts'), TYPES_CHECK_TS);
      writeFileSync(join(project, 'types-check.cts'), TYPES_CHECK_TS);
      const tscArgs = [
        '--strict',
        '--skipLibCheck',
        'false',
        '--noEmit',
        '--target',
        'es2022',
        '--module',
        'nodenext',
      ];
      run('node', [TSC, ...tscArgs, 'types-check.mts', 'types-check.cts'], { cwd: project, env });
      console.log('types compile');
    }
    console.log(
      `\nfirst run: OK (ES modules, CommonJS, --version, dev, TypeScript module, types) in ${work}`,
    );
  } finally {
    for (const schema of schemas)
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {});
    await pool.end();
    if (KEEP) console.log(`kept ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(`\nfirst run: FAILED: ${err instanceof CheckFailed ? err.message : (err?.stack ?? err)}`);
  process.exitCode = 1;
});
