/**
 * A server that cannot be reached gives a ConnectionError (stable code, reason, cause kept, a hint),
 * never node-postgres's or the socket's own error, at every entry point that connects.
 */
import { createServer, type Server, type Socket } from 'node:net';

import { afterAll, describe, expect, it } from 'vitest';

import { runCli } from '../../src/cli/main.js';
import { TaskQ } from '../../src/client/taskq.js';
import { PgDriver } from '../../src/db/pg-driver.js';
import { ConnectionError } from '../../src/errors/index.js';
import { Migrator } from '../../src/migrations/migrator.js';
import { isTransientError } from '../../src/db/transient-errors.js';
import { TEST_DSN, uniqueSchemaName } from '../helpers/db.js';

/** A loopback port nothing listens on: bound, read, and released. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** TEST_DSN with another database name (and, when given, user). */
function dsnWith(change: { database?: string; user?: string; password?: string }): string {
  const url = new URL(TEST_DSN);
  if (change.database !== undefined) url.pathname = `/${change.database}`;
  if (change.user !== undefined) url.username = change.user;
  if (change.password !== undefined) url.password = change.password;
  return url.toString();
}

async function failure(p: Promise<unknown>): Promise<ConnectionError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConnectionError);
  return err as ConnectionError;
}

const silent = { TASKQ_LOG_LEVEL: 'silent' };

describe('ConnectionError', () => {
  it('a refused port: reason refused, the socket error kept as cause, a hint naming the DSN', async () => {
    const port = await freePort();
    const dsn = `postgres://postgres:hunter2@127.0.0.1:${port}/test`;
    const tq = await TaskQ.open({ dsn, schema: uniqueSchemaName('conn') });
    try {
      const err = await failure(tq.list({ limit: 1 }));
      expect(err.code).toBe('TASKQ_CONNECTION_FAILED');
      expect(err.reason).toBe('refused');
      expect(err.target).toBe(`postgres://postgres:***@127.0.0.1:${port}/test`);
      expect((err.cause as { code?: string }).code).toBe('ECONNREFUSED');
      expect(err.message).toContain(
        `could not connect to Postgres at postgres://postgres:***@127.0.0.1:${port}/test`,
      );
      expect(err.message).toContain('ECONNREFUSED');
      expect(err.message).toContain('Check that the server is running');
      expect(err.message).toContain('TASKQ_PG_DSN');
      expect(err.message).not.toContain('hunter2');
      // Workers keep retrying a refused connection (the server may be restarting).
      expect(isTransientError(err)).toBe(true);
    } finally {
      await tq.close();
    }
  });

  it('a database that does not exist on the machine’s Postgres: reason database-not-found', async () => {
    const missing = uniqueSchemaName('no_such_db');
    const driver = new PgDriver({ connection: dsnWith({ database: missing }) });
    try {
      const err = await failure(driver.query('SELECT 1'));
      expect(err.reason).toBe('database-not-found');
      expect((err.cause as { code?: string }).code).toBe('3D000');
      expect(err.message).toContain(`database "${missing}" does not exist`);
      expect(err.message).toContain('Create the database');
      expect(isTransientError(err)).toBe(false);
      // Every way the driver connects maps the failure.
      expect((await failure(driver.transaction(async () => 1))).reason).toBe('database-not-found');
      expect((await failure(driver.dedicated())).reason).toBe('database-not-found');
    } finally {
      await driver.close();
    }
  });

  it('a role the server does not know: reason auth-failed', async () => {
    const driver = new PgDriver({ connection: dsnWith({ user: uniqueSchemaName('no_such_role') }) });
    try {
      const err = await failure(driver.query('SELECT 1'));
      expect(err.reason).toBe('auth-failed');
      expect(err.message).toContain('Check the user and password');
    } finally {
      await driver.close();
    }
  });

  it('a host name that does not resolve: reason host-not-found', async () => {
    const driver = new PgDriver({ connection: 'postgres://postgres@taskq-no-such-host.invalid:5432/test' });
    try {
      const err = await failure(driver.query('SELECT 1'));
      expect(err.reason).toBe('host-not-found');
      expect(err.message).toContain('Check the host name');
    } finally {
      await driver.close();
    }
  });

  describe('a server that accepts and never answers', () => {
    const sockets: Socket[] = [];
    let server: Server | null = null;
    afterAll(async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    });

    it('gives reason timeout once the connect timeout passes', async () => {
      server = createServer((s) => sockets.push(s));
      await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as { port: number };
      const driver = new PgDriver({
        connection: { host: '127.0.0.1', port, database: 'test', connectionTimeoutMillis: 200 },
      });
      try {
        const err = await failure(driver.query('SELECT 1'));
        expect(err.reason).toBe('timeout');
        expect(err.target).toBe(`127.0.0.1:${port}/test`);
      } finally {
        await driver.close();
      }
    });
  });

  it('a statement error on an open connection is not a ConnectionError', async () => {
    const driver = new PgDriver({ connection: TEST_DSN });
    try {
      const err = await driver.query('SELEC 1').catch((e: unknown) => e);
      expect(err).not.toBeInstanceOf(ConnectionError);
      expect((err as { code?: string }).code).toBe('42601');
    } finally {
      await driver.close();
    }
  });

  it('the migrator (and so `taskq migrate`) reports it too', async () => {
    const port = await freePort();
    const driver = new PgDriver({ connection: `postgres://postgres@127.0.0.1:${port}/test` });
    try {
      expect((await failure(new Migrator(driver, { schema: 'taskq' }).up())).reason).toBe('refused');
    } finally {
      await driver.close();
    }
  });

  it('the CLI prints the message and the hint, exits 1, and shows no stack', async () => {
    const port = await freePort();
    const stderr: string[] = [];
    const code = await runCli(['migrate', 'up'], {
      out: () => undefined,
      err: (l) => stderr.push(l),
      env: { ...silent, TASKQ_PG_DSN: `postgres://postgres:pw@127.0.0.1:${port}/test` },
    });
    expect(code).toBe(1);
    const text = stderr.join('\n');
    expect(text).toContain(
      `taskq: could not connect to Postgres at postgres://postgres:***@127.0.0.1:${port}/test`,
    );
    expect(text).toContain('Check that the server is running');
    expect(text).not.toContain('    at ');
  });
});
