import { resolve } from 'node:path';

import { describe, expect, it } from 'vitest';

import { runCli } from '../../src/cli/main.js';
import type { CliIo } from '../../src/cli/io.js';
import {
  parseProviderReference,
  resolveCredentialProvider,
} from '../../src/credentials/provider-reference.js';
import { CredentialProviderReferenceError } from '../../src/errors/credential-errors.js';
import { loadWorkerSettings } from '../../src/settings/load-worker-settings.js';
import { migratedSchema, TEST_DSN } from '../helpers/db.js';

const FIXTURES = 'test/fixtures/credentials';
const ref = (name: string, file = 'providers.mjs'): string => `./${FIXTURES}/${file}:${name}`;

describe('parseProviderReference', () => {
  it.each([
    ['./a.js:provider', { module: './a.js', exportName: 'provider' }],
    ['./a.js#provider', { module: './a.js', exportName: 'provider' }],
    ['@acme/auth:make', { module: '@acme/auth', exportName: 'make' }],
    ['C:\\app\\auth.js:p', { module: 'C:\\app\\auth.js', exportName: 'p' }],
  ])('%s', (text, expected) => {
    expect(parseProviderReference(text)).toEqual(expected);
  });

  it.each(['./a.js', ':p', './a.js:', './a.js:not-a-name', 'provider'])('refuses %s', (text) => {
    expect(parseProviderReference(text)).toHaveProperty('problem');
  });
});

describe('resolveCredentialProvider', () => {
  it.each(['instance', 'factory', 'asyncFactory', 'ProviderClass', 'default'])(
    'takes an export that is %s',
    async (name) => {
      const provider = await resolveCredentialProvider(ref(name), 'pg', 'test');
      expect(await provider.getPgCredential()).toEqual({ password: 'secret' });
    },
  );

  it('takes <module>#<export> and a Redis provider', async () => {
    const p = await resolveCredentialProvider(`./${FIXTURES}/providers.mjs#redisInstance`, 'redis', 'test');
    expect(await p.getRedisCredential()).toEqual({ username: 'u', password: 'p' });
  });

  const failures: [string, string, RegExp][] = [
    ['malformed', './providers.mjs', /must be <module>:<export>/],
    ['missing module', ref('x', 'nope.mjs'), /module not found: .*nope\.mjs/],
    ['missing package', 'no-such-package-taskq:x', /module "no-such-package-taskq" not found/],
    ['failing module', ref('x', 'broken.mjs'), /broken\.mjs failed to load: syntax of the config is wrong/],
    ['missing export', ref('nope'), /has no export "nope" \(its exports: .*instance/],
    ['a number', ref('notAProvider'), /is a number, not a provider/],
    [
      'a factory returning nothing',
      ref('returnsNothing'),
      /returns undefined without a getPgCredential\(\) method/,
    ],
    ['a factory that throws', ref('throws'), /calling export "throws" failed: vault unreachable/],
    ['a provider of the other kind', ref('redisInstance'), /is an object, not a provider/],
  ];
  it.each(failures)('refuses %s, naming the source and the reference', async (_what, reference, message) => {
    const err = await resolveCredentialProvider(reference, 'pg', '--pg-credential-provider').catch((e) => e);
    expect(err).toBeInstanceOf(CredentialProviderReferenceError);
    expect(err.code).toBe('TASKQ_CREDENTIAL_PROVIDER_REFERENCE');
    expect(err.message).toContain(`--pg-credential-provider = "${reference}"`);
    expect(err.message).toMatch(message);
  });

  it('resolves relative paths from cwd', async () => {
    const provider = await resolveCredentialProvider('./providers.mjs:instance', 'pg', 'test', {
      cwd: resolve(FIXTURES),
    });
    expect(typeof provider.getPgCredential).toBe('function');
  });
});

describe('settings and CLI', () => {
  it('taskq migrate, queues, schedules, jobs and actors connect through --pg-credential-provider', async () => {
    const db = await migratedSchema('cliprov');
    try {
      const dsn = `${TEST_DSN}${TEST_DSN.includes('?') ? '&' : '?'}sslmode=disable`;
      const flags = ['--dsn', dsn, '--schema', db.schema, '--pg-credential-provider', ref('ProviderClass')];
      for (const args of [
        ['migrate', 'status'],
        ['queues', 'list'],
        ['schedules', 'list'],
        ['jobs', 'list'],
        ['actors'],
      ]) {
        const cli = io({});
        expect(await runCli([...args, ...flags], cli), `${args.join(' ')}: ${cli.stderr.join('\n')}`).toBe(0);
      }
      const bad = io({ TASKQ_PG_CREDENTIAL_PROVIDER: ref('missing') });
      expect(await runCli(['queues', 'list', '--dsn', dsn, '--schema', db.schema], bad)).toBe(1);
      expect(bad.stderr.join('\n')).toMatch(/TASKQ_PG_CREDENTIAL_PROVIDER = .*has no export "missing"/);
    } finally {
      await db.drop();
    }
  });

  it('taskq worker refuses --redis-credential-provider without TASKQ_REDIS_URL (exit 2)', async () => {
    const cli = io({ TASKQ_PG_DSN: TEST_DSN });
    const args = [
      'worker',
      '--module',
      'test/fixtures/cli/actors.ts',
      '--redis-credential-provider',
      ref('redisInstance'),
    ];
    expect(await runCli(args, cli)).toBe(2);
    expect(cli.stderr.join('\n')).toMatch(/Redis credential provider needs TASKQ_REDIS_URL/);
  });

  it('load the references, refusing a malformed one', () => {
    const { settings } = loadWorkerSettings({
      env: { TASKQ_PG_CREDENTIAL_PROVIDER: ref('instance') },
    });
    expect(settings.pgCredentialProvider).toBe(ref('instance'));
    expect(() => loadWorkerSettings({ env: { TASKQ_PG_CREDENTIAL_PROVIDER: 'no-export' } })).toThrow(
      /TASKQ_PG_CREDENTIAL_PROVIDER.*must be <module>:<export>/,
    );
  });

  function io(env: NodeJS.ProcessEnv): CliIo & { stderr: string[] } {
    const stderr: string[] = [];
    return { stderr, out: () => undefined, err: (l) => stderr.push(l), env };
  }

  it.each([
    [
      ['migrate', 'status', '--pg-credential-provider', ref('nope')],
      {},
      /--pg-credential-provider = .*has no export "nope"/,
    ],
    [
      ['migrate', 'up'],
      { TASKQ_PG_CREDENTIAL_PROVIDER: ref('x', 'nope.mjs') },
      /TASKQ_PG_CREDENTIAL_PROVIDER = .*module not found/,
    ],
    [
      ['worker', '--module', 'test/fixtures/cli/actors.ts', '--pg-credential-provider', ref('notAProvider')],
      {},
      /--pg-credential-provider = .*is a number, not a provider/,
    ],
    [
      ['worker', '--module', 'test/fixtures/cli/actors.ts', '--redis-credential-provider', ref('factory')],
      { TASKQ_REDIS_URL: 'redis://127.0.0.1:6379' },
      /--redis-credential-provider = .*returns an object without a getRedisCredential\(\) method/,
    ],
  ] as [string[], NodeJS.ProcessEnv, RegExp][])(
    'taskq %j exits 1 on a bad reference',
    async (args, env, message) => {
      const cli = io({ TASKQ_PG_DSN: TEST_DSN, ...env });
      expect(await runCli(args, cli)).toBe(1);
      expect(cli.stderr.join('\n')).toMatch(message);
    },
  );
});
