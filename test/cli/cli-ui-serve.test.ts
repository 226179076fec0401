/**
 * `taskq ui serve` in a child process: it fails closed without authentication outside dev, serves
 * behind TASKQ_HEALTH_TOKEN, and applies every TASKQ_ADMIN_* setting it reads (each set off its
 * default here and observed over HTTP).
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { TaskQ } from '../../src/client/taskq.js';
import { actor } from '../../src/core/actor.js';
import { RateLimitRegistry, syncRateLimitBuckets, TokenBucket } from '../../src/ratelimit/index.js';
import { cleanEnv, runTsx } from '../fixtures/cli/run-cli-process.js';
import { startUiServe } from '../fixtures/cli/ui-serve-process.js';
import { migratedSchema, TEST_DSN, uniqueSchemaName, type TestSchema } from '../helpers/db.js';
import { startOidcIdp } from '../helpers/oidc-idp.js';
import { TEST_REDIS_URL } from '../ratelimit/helpers.js';
import { waitFor } from '../helpers/wait.js';

let db: TestSchema;
let tq: TaskQ;
let failedJob: string;
const work = actor({ name: 'ui_cli_work', queue: 'ui_cli_q' }, async () => undefined);

/** `taskq ui serve` on this file's schema (see {@link startUiServe}). */
const startServe = (env: Record<string, string>, flags: string[] = []) => startUiServe(db.schema, env, flags);

beforeAll(async () => {
  db = await migratedSchema('ui_cli');
  tq = await TaskQ.open({ dsn: TEST_DSN, schema: db.schema });
  failedJob = (await tq.enqueue(work, {})).jobId;
  // A pending job on a queue no worker serves: the overview lists the queue with a banner.
  await tq.enqueue(work, {});
  await db.pool.query(
    `UPDATE "${db.schema}".jobs SET status = 'failed', attempt = 1, finished_at = clock_timestamp() WHERE id = $1`,
    [failedJob],
  );
});
afterAll(async () => {
  await tq.close();
  await db.drop();
});

describe('taskq ui serve', () => {
  it('refuses to start (exit 2) without authentication outside dev, saying what to do', async () => {
    const extras: Record<string, string>[] = [{}, { TASKQ_ENVIRONMENT: 'production' }];
    for (const extra of extras) {
      const r = await runTsx(
        'src/cli/bin.ts',
        ['ui', 'serve', '--dsn', TEST_DSN, '--schema', db.schema, '--port', '0'],
        { env: cleanEnv(extra) },
      );
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(/refuses to start without authentication/);
      expect(r.stderr).toMatch(/TASKQ_HEALTH_TOKEN/);
    }
  });

  it('TASKQ_MIGRATE_ON_START=true migrates an empty schema before serving; without it the schema is refused', async () => {
    const fresh = uniqueSchemaName('ui_cli_migrate');
    try {
      const refused = await runTsx('src/cli/bin.ts', ['ui', 'serve', '--dsn', TEST_DSN, '--schema', fresh], {
        env: cleanEnv({ TASKQ_ENVIRONMENT: 'dev', TASKQ_ADMIN_PORT: '0' }),
      });
      expect(refused.code, refused.stderr).toBe(1);
      expect(refused.stderr).toMatch(/migrate up/);
      // The last --schema wins: the server runs on the fresh schema.
      const server = await startServe({ TASKQ_ENVIRONMENT: 'dev', TASKQ_MIGRATE_ON_START: 'true' }, [
        '--schema',
        fresh,
      ]);
      try {
        expect(server.output()).toMatch(
          new RegExp(`TASKQ_MIGRATE_ON_START: applied \\S+.* to schema ${fresh}`),
        );
        expect(server.output()).toContain(`serving the admin UI of schema ${fresh}`);
        expect((await fetch(`http://127.0.0.1:${server.port}/jobs`)).status).toBe(200);
        const { rows } = await db.pool.query(
          `SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'jobs'`,
          [fresh],
        );
        expect(rows[0]).toEqual({ n: 1 });
      } finally {
        expect(await server.stop(), server.output()).toBe(0);
      }
    } finally {
      await db.pool.query(`DROP SCHEMA IF EXISTS "${fresh}" CASCADE`);
    }
  });

  it('refuses a bad setting (exit 2) naming it', async () => {
    const r = await runTsx('src/cli/bin.ts', ['ui', 'serve', '--dsn', TEST_DSN, '--schema', db.schema], {
      env: cleanEnv({ TASKQ_ENVIRONMENT: 'dev', TASKQ_ADMIN_UI_FRAME_ANCESTORS: 'everyone' }),
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/TASKQ_ADMIN_UI_FRAME_ANCESTORS/);
  });

  it('serves behind TASKQ_HEALTH_TOKEN: 401 without the bearer token, 200 with it', async () => {
    // The flags win over TASKQ_ADMIN_HOST / TASKQ_ADMIN_PORT.
    const server = await startServe(
      {
        TASKQ_ENVIRONMENT: 'production',
        TASKQ_HEALTH_TOKEN: 'ui-cli-token',
        TASKQ_ADMIN_HOST: '::1',
        TASKQ_ADMIN_PORT: '1',
      },
      ['--host', '127.0.0.1', '--port', '0'],
    );
    try {
      const url = `http://127.0.0.1:${server.port}/`;
      expect((await fetch(url)).status, server.output()).toBe(401);
      const ok = await fetch(url, { headers: { authorization: 'Bearer ui-cli-token' } });
      expect(ok.status, server.output()).toBe(200);
      expect(await ok.text()).toContain('ui_cli_q');
    } finally {
      expect(await server.stop(), server.output()).toBe(0);
    }
  });

  it('TASKQ_ADMIN_UI_REQUIRE_AUTH=false starts without authentication outside dev', async () => {
    const server = await startServe({
      TASKQ_ENVIRONMENT: 'production',
      TASKQ_ADMIN_UI_REQUIRE_AUTH: 'false',
    });
    try {
      expect((await fetch(`http://127.0.0.1:${server.port}/`)).status).toBe(200);
    } finally {
      await server.stop();
    }
  });

  it('applies TASKQ_ENVIRONMENT=dev and the TASKQ_ADMIN_* settings', async () => {
    const server = await startServe({
      TASKQ_ENVIRONMENT: 'dev',
      TASKQ_ADMIN_UI_FRAME_ANCESTORS: 'self',
      TASKQ_ADMIN_UI_SECURE_COOKIES: 'false',
      TASKQ_ADMIN_ACTIONS_ENABLED: 'true',
      TASKQ_ADMIN_MAX_SSE_CONNECTIONS: '1',
      TASKQ_ADMIN_UI_POLLING_INTERVAL_SECONDS: '0.5',
      TASKQ_ADMIN_WORKER_LIVENESS_SECONDS: '7',
    });
    const base = `http://127.0.0.1:${server.port}`;
    const streams = new AbortController();
    try {
      // dev: no authentication needed.
      const overview = await fetch(`${base}/`);
      expect(overview.status).toBe(200);
      expect(overview.headers.get('x-frame-options')).toBe('SAMEORIGIN');
      expect(overview.headers.get('content-security-policy')).toContain("frame-ancestors 'self'");
      const cookie = overview.headers.getSetCookie().find((c) => c.startsWith('taskq_admin_csrf='));
      expect(cookie).toBeDefined();
      expect(cookie).not.toMatch(/;\s*Secure/i);
      // The unserved queue's banner names the liveness window.
      expect((await overview.text()).replace(/\s+/g, ' ')).toMatch(
        /no alive worker serves it \(none seen in the last 7 s\)/,
      );

      const page = await (await fetch(`${base}/jobs/${failedJob}`)).text();
      expect(page).toContain(`action="/jobs/${failedJob}/retry"`);
      expect(page).toContain('data-poll-ms="500"');

      const pending = (await tq.enqueue(work, {})).jobId;
      const first = await fetch(`${base}/jobs/${pending}/stream`, { signal: streams.signal });
      expect(first.status).toBe(200);
      const second = await fetch(`${base}/jobs/${pending}/stream`, { signal: streams.signal });
      expect(second.status).toBe(503);
    } finally {
      streams.abort();
      expect(await server.stop(), server.output()).toBe(0);
    }
  });

  it('TASKQ_SSO_BACKEND with a required variable missing exits 2 naming it', async () => {
    const cases: [Record<string, string>, RegExp][] = [
      [
        { TASKQ_SSO_BACKEND: 'oidc', TASKQ_OIDC_CLIENT_ID: 'c' },
        /TASKQ_OIDC_ISSUER.*must be set when TASKQ_SSO_BACKEND=oidc/,
      ],
      [
        { TASKQ_SSO_BACKEND: 'saml', TASKQ_SAML_ENTITY_ID: 'sp', TASKQ_ADMIN_URL: 'https://ops.example.com' },
        /TASKQ_SAML_IDP_ENTITY_ID.*must be set when TASKQ_SSO_BACKEND=saml \(missing: TASKQ_SAML_IDP_ENTITY_ID, TASKQ_SAML_IDP_SSO_URL, TASKQ_SAML_IDP_X509_CERT, TASKQ_SAML_SESSION_SECRET\)/,
      ],
      [
        {
          TASKQ_SSO_BACKEND: 'oidc',
          TASKQ_OIDC_ISSUER: 'https://idp.example.com',
          TASKQ_OIDC_CLIENT_ID: 'c',
          TASKQ_OIDC_CLIENT_SECRET: 's',
          TASKQ_OIDC_SESSION_SECRET: 'too-short',
          TASKQ_ADMIN_URL: 'https://ops.example.com',
        },
        /TASKQ_OIDC_SESSION_SECRET: options\.oidc\.sessionSecrets\[0\].*at least 32 characters/,
      ],
    ];
    for (const [env, message] of cases) {
      const r = await runTsx('src/cli/bin.ts', ['ui', 'serve', '--dsn', TEST_DSN, '--schema', db.schema], {
        env: cleanEnv({ TASKQ_ENVIRONMENT: 'production', ...env }),
      });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stderr).not.toContain('too-short');
    }
  });

  it('TASKQ_SSO_BACKEND=oidc is authentication: it starts in production and sends visitors to the IdP', async () => {
    const adminUrl = 'http://127.0.0.1:9/ops';
    const idp = await startOidcIdp([`${adminUrl}/auth/callback`], {});
    const server = await startServe({
      TASKQ_ENVIRONMENT: 'production',
      TASKQ_ADMIN_URL: adminUrl,
      TASKQ_SSO_BACKEND: 'oidc',
      TASKQ_OIDC_ISSUER: idp.issuer,
      TASKQ_OIDC_CLIENT_ID: idp.clientId,
      TASKQ_OIDC_CLIENT_SECRET: idp.clientSecret,
      // Two secrets: the rotation form (the first signs).
      TASKQ_OIDC_SESSION_SECRET: `${'n'.repeat(32)}, ${'o'.repeat(32)}`,
      TASKQ_OIDC_SCOPE: 'openid email',
    });
    try {
      // Printed right after the line startServe waits for, so possibly in a later chunk.
      await waitFor(() => server.output().includes(`open it at ${adminUrl}/`), 10_000, 'the adminUrl line');
      const base = `http://127.0.0.1:${server.port}`;
      const page = await fetch(`${base}/`, { headers: { accept: 'text/html' }, redirect: 'manual' });
      expect(page.status, server.output()).toBe(303);
      expect(page.headers.get('location')).toBe('/auth/login?next=%2F');
      const login = await fetch(`${base}/auth/login`, { redirect: 'manual' });
      expect(login.status, server.output()).toBe(303);
      const target = new URL(login.headers.get('location') ?? '');
      expect(target.origin).toBe(idp.issuer);
      // TASKQ_ADMIN_URL gives the redirect URI the IdP is told to send the browser back to.
      expect(target.searchParams.get('redirect_uri')).toBe(`${adminUrl}/auth/callback`);
      expect(target.searchParams.get('scope')).toBe('openid email');
    } finally {
      expect(await server.stop(), server.output()).toBe(0);
      await idp.close();
    }
  });

  it("--module: the actors page checks the stored rows against the module's actors (drift)", async () => {
    // A row as an older version of the code left it: cli_echo on another queue.
    await tq.backend.syncActorConfig([{ actor: 'cli_echo', queue: 'ui_cli_old_q', metadata: {} }], {
      force: false,
    });
    const missing = await runTsx(
      'src/cli/bin.ts',
      ['ui', 'serve', '--dsn', TEST_DSN, '--schema', db.schema, '--module', 'test/fixtures/cli/nowhere.ts'],
      { env: cleanEnv({ TASKQ_ENVIRONMENT: 'dev' }) },
    );
    expect(missing.code, missing.stderr).toBe(2);
    expect(missing.stderr).toMatch(/--module test\/fixtures\/cli\/nowhere\.ts: no such file/);

    const server = await startServe({ TASKQ_ENVIRONMENT: 'dev' }, [
      '--module',
      'test/fixtures/cli/actors.ts',
    ]);
    try {
      const page = (await (await fetch(`http://127.0.0.1:${server.port}/actors`)).text()).replace(
        /\s+/g,
        ' ',
      );
      expect(page).not.toContain('Drift is not shown');
      expect(page).toContain('queue:</strong> code &quot;cli_fixture&quot;, stored &quot;ui_cli_old_q&quot;');
      // Declared in the module, never registered by a worker.
      expect(page).toContain('cli_sum');
    } finally {
      expect(await server.stop(), server.output()).toBe(0);
    }
  });

  it('TASKQ_ADMIN_UI_ALLOW_RATE_LIMIT_RESET=true (with actions) shows Reset and the reset refills the limit', async () => {
    const quota = new TokenBucket('ui_cli_quota', { capacity: 2, refillPerSecond: 0, backend: 'postgres' });
    // A Redis-backed one too: TASKQ_REDIS_URL gives the UI its state.
    const onRedis = new TokenBucket(`ui_cli_redis_${process.pid}`, {
      capacity: 7,
      refillPerSecond: 1,
      backend: 'redis',
    });
    const registry = new RateLimitRegistry();
    registry.register(quota);
    registry.register(onRedis);
    const ctx = { driver: db.driver, schema: db.schema };
    await syncRateLimitBuckets(registry, ctx);
    await quota.acquire(ctx, 2);
    const server = await startServe({
      TASKQ_ENVIRONMENT: 'dev',
      TASKQ_ADMIN_UI_SECURE_COOKIES: 'false',
      TASKQ_ADMIN_ACTIONS_ENABLED: 'true',
      TASKQ_ADMIN_UI_ALLOW_RATE_LIMIT_RESET: 'true',
      TASKQ_REDIS_URL: TEST_REDIS_URL,
    });
    const base = `http://127.0.0.1:${server.port}`;
    try {
      const page = await fetch(`${base}/rate-limits`);
      const text = await page.text();
      expect(page.status, server.output()).toBe(200);
      expect(text).toContain('action="/rate-limits/ui_cli_quota/reset"');
      expect(text.replace(/\s+/g, ' ')).toMatch(new RegExp(`${onRedis.name}.*?7 / 7 tokens left`));
      const token = /<meta name="csrf-token" content="([^"]+)"/.exec(text)?.[1] ?? '';
      const cookie = page.headers
        .getSetCookie()
        .find((c) => c.startsWith('taskq_admin_csrf='))
        ?.split(';')[0];
      const reset = await fetch(`${base}/rate-limits/ui_cli_quota/reset`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookie ?? '' },
        body: new URLSearchParams({ _csrf: token }).toString(),
      });
      expect(reset.status, server.output()).toBe(303);
      expect((await quota.peek(ctx)).tokensRemaining).toBe(2);
    } finally {
      expect(await server.stop(), server.output()).toBe(0);
    }
  });
});
