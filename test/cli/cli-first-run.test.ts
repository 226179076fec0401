/**
 * What a new user meets first: `taskq --version`, a TypeScript `--module` on a Node.js that cannot
 * load TypeScript, and connection strings checked the same way by every command.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { importUserModule, resolveTsx } from '../../src/cli/import-user-module.js';
import type { CliIo } from '../../src/cli/io.js';
import { CliExit } from '../../src/cli/io.js';
import { runCli } from '../../src/cli/main.js';
import { loadActorModule } from '../../src/cli/worker-command.js';
import { isPackageNotFound, MissingDependencyError } from '../../src/errors/missing-dependency-error.js';
import { TASKQ_VERSION } from '../../src/core/version.js';
import { REPO_ROOT } from '../fixtures/cli/run-cli-process.js';

function io(env: NodeJS.ProcessEnv = {}): CliIo & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return { stdout, stderr, out: (l) => stdout.push(l), err: (l) => stderr.push(l), env };
}

const temps: string[] = [];
/** A folder outside this repository, so no tsx can be resolved from it. */
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'taskq-first-run-'));
  temps.push(dir);
  return dir;
}
afterAll(() => {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

describe('taskq --version', () => {
  it('prints the version of package.json and exits 0', async () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(TASKQ_VERSION).toBe(pkg.version);
    for (const flag of ['--version', '-v']) {
      const cli = io();
      expect(await runCli([flag], cli)).toBe(0);
      expect(cli.stdout).toEqual([pkg.version]);
    }
  });
});

describe('a TypeScript --module on a Node.js that cannot load TypeScript', () => {
  /** What Node.js 20 throws when it is asked to import a .ts file with no loader. */
  const cannotLoadTs = (url: string): Promise<never> =>
    Promise.reject(
      Object.assign(new TypeError(`Unknown file extension ".ts" for ${url}`), {
        code: 'ERR_UNKNOWN_FILE_EXTENSION',
      }),
    );

  it('without tsx in the project, says exactly what to install or pass instead (exit 2)', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'actors.ts'), 'export const x: number = 1;\n');
    const modulePath = relative(process.cwd(), join(dir, 'actors.ts'));
    const err = await loadActorModule(modulePath, io(), {
      importModule: cannotLoadTs,
      resolveTsx: () => null,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CliExit);
    expect((err as CliExit).exitCode).toBe(2);
    const message = (err as CliExit).message;
    expect(message).toContain(`--module ${modulePath}: Node.js ${process.version} cannot load TypeScript`);
    expect(message).toContain('npm install -D tsx');
    expect(message).toContain('--module ./dist/actors.js');
  });

  it('looks for tsx from the module’s own folder', () => {
    const dir = tempDir();
    expect(resolveTsx(join(dir, 'actors.ts'))).toBeNull();
    const found = resolveTsx(join(REPO_ROOT, 'test/fixtures/cli/actors.ts'));
    expect(found?.esm).toContain(join('node_modules', 'tsx'));
    expect(found?.cjs).toContain(join('node_modules', 'tsx'));
  });

  it('a JavaScript module, or a load error of another kind, is not about tsx', async () => {
    const dir = tempDir();
    const file = join(dir, 'actors.mjs');
    writeFileSync(file, 'export const x = 1;\n');
    const mod = await importUserModule(file, 'actors.mjs', { resolveTsx: () => null });
    expect(mod.x).toBe(1);
    const syntax = await importUserModule(join(dir, 'actors.ts'), 'actors.ts', {
      importModule: () => Promise.reject(new SyntaxError('Unexpected token')),
      resolveTsx: () => null,
    }).catch((e: unknown) => e);
    expect(syntax).toBeInstanceOf(SyntaxError);
  });

  it('reads the actors of a CommonJS module whose exports Node could not name', async () => {
    const mod = await loadActorModule('test/fixtures/cli/actors.ts', io(), {
      // What import() returns for such a module: only `default`, the module.exports object.
      importModule: async (url) => ({ default: { ...(await import(url)) } }),
    });
    expect(mod.actors.map((a) => a.name).sort()).toEqual(['cli_echo', 'cli_sum']);
  });
});

describe('connection strings in the CLI', () => {
  it('--dsn mysql://… is refused before connecting: exit 2, the flag, the value masked, the rule', async () => {
    for (const args of [
      ['migrate', 'up', '--dsn', 'mysql://root:hunter2@db/app'],
      ['queues', 'list', '--dsn', 'mysql://root:hunter2@db/app'],
      ['worker', '--module', 'test/fixtures/cli/actors.ts', '--dsn', 'mysql://root:hunter2@db/app'],
    ]) {
      const cli = io();
      expect(await runCli(args, cli), args.join(' ')).toBe(2);
      const text = cli.stderr.join('\n');
      expect(text, args.join(' ')).toContain('--dsn');
      expect(text, args.join(' ')).toContain('"mysql://root:***@db/app"');
      expect(text, args.join(' ')).toContain('must be a postgres:// or postgresql:// URL');
      expect(text, args.join(' ')).not.toContain('hunter2');
    }
  });

  it('a bad TASKQ_PG_DSN names the variable, in taskq migrate and taskq dev alike', async () => {
    for (const args of [['migrate', 'status'], ['dev']]) {
      const cli = io({ TASKQ_PG_DSN: 'mysql://root:hunter2@db/app' });
      expect(await runCli(args, cli), args.join(' ')).toBe(2);
      const text = cli.stderr.join('\n');
      expect(text, args.join(' ')).toContain('TASKQ_PG_DSN: "mysql://root:***@db/app" is invalid');
      expect(text, args.join(' ')).not.toContain('hunter2');
    }
  });

  it('`migrate sql`, which never connects, does not read TASKQ_PG_DSN', async () => {
    const cli = io({ TASKQ_PG_DSN: 'mysql://db/app' });
    expect(await runCli(['migrate', 'sql'], cli)).toBe(0);
  });
});

describe('an optional package that is not installed', () => {
  it('is told apart from a failure inside an installed package, and named with its install command', async () => {
    const missing = await import('@electric-sql/pglite-not-installed' as string).catch((e: unknown) => e);
    expect(isPackageNotFound(missing, '@electric-sql/pglite-not-installed')).toBe(true);
    expect(isPackageNotFound(missing, '@electric-sql/pglite')).toBe(false);
    expect(
      isPackageNotFound(new Error("Cannot find package '@electric-sql/pglite'"), '@electric-sql/pglite'),
    ).toBe(false);
    const err = new MissingDependencyError(
      '@electric-sql/pglite',
      'The embedded Postgres',
      'npm install -D @electric-sql/pglite',
      {
        alternative: 'set TASKQ_PG_DSN',
        cause: missing,
      },
    );
    expect(err.code).toBe('TASKQ_MISSING_DEPENDENCY');
    expect(err.message).toBe(
      'The embedded Postgres needs the package @electric-sql/pglite, which is not installed. ' +
        'Install it: npm install -D @electric-sql/pglite; or set TASKQ_PG_DSN',
    );
    expect(err.cause).toBe(missing);
  });
});
