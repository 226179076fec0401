import { describe, expect, it } from 'vitest';

import { TaskQ } from '../../src/client/taskq.js';
import {
  maskConnectionString,
  pgConnectionSettings,
  validateConnectionString,
} from '../../src/db/connection-string.js';
import { PgDriver } from '../../src/db/pg-driver.js';
import { InvalidArgumentError } from '../../src/errors/index.js';
import { loadWorkerSettings } from '../../src/settings/load-worker-settings.js';
import { SettingsError } from '../../src/settings/settings-error.js';
import { TEST_DSN } from '../helpers/db.js';
import { rejection } from '../helpers/rejections.js';

describe('validateConnectionString', () => {
  it.each([
    'postgres://postgres@127.0.0.1:5432/test',
    'postgresql://user:secret@db.internal/app?sslmode=disable',
    'POSTGRES://h/db',
    'postgresql:///test?host=/var/run/postgresql',
    'host=127.0.0.1 port=5432 dbname=test user=postgres',
    "host = localhost dbname = 'my db' password = 'it\\'s secret'",
    '  postgres://h/db  ',
  ])('accepts %s', (dsn) => {
    expect(validateConnectionString(dsn, 'dsn')).toBe(dsn.trim());
  });

  it('rejects another scheme, naming the field, the value and the rule', () => {
    const err = rejection(() => validateConnectionString('mysql://root@db/app', 'TaskQ.open.dsn'));
    expect(err.field).toBe('TaskQ.open.dsn');
    expect(err.message).toContain('TaskQ.open.dsn: "mysql://root@db/app" is invalid');
    expect(err.message).toContain('must be a postgres:// or postgresql:// URL, or libpq key=value pairs');
    expect(err.rule).toContain('mysql:// is not a Postgres URL');
  });

  it.each([
    ['', 'must be a postgres:// or postgresql:// URL'],
    ['   ', 'must be a postgres:// or postgresql:// URL'],
    ['localhost:5432', 'must be a postgres:// or postgresql:// URL'],
    ['http://db/app', 'http:// is not a Postgres URL'],
    ['postgres://u@h:99999/db', 'must be a valid postgres:// URL'],
    ['host=h dbnme=app', 'unknown keyword "dbnme"'],
    ['host=h port=x', 'the port must be an integer from 1 to 65535'],
    ["host=h dbname='app", 'the quoted value of "dbname" has no closing quote'],
    ['host=h dbname', 'missing "=" after keyword "dbname"'],
  ])('rejects %j: %s', (dsn, rule) => {
    const err = rejection(() => validateConnectionString(dsn, 'f'));
    expect(err.field).toBe('f');
    expect(err.rule).toContain(rule);
  });

  it('rejects what is not a string', () => {
    for (const value of [undefined, null, 42, {}]) {
      expect(rejection(() => validateConnectionString(value, 'f')).message).toContain('f: ');
    }
  });

  it('masks the password in the message and in the error value', () => {
    const cases = [
      'mysql://root:hunter2@db/app',
      'postgres://u:hun/ter2@h/db', // an unescaped '/' makes the URL unparsable
      "host=h password='hunter2 x' dbnme=app",
      'host=h password=hunter2 port=http',
    ];
    for (const dsn of cases) {
      const err = rejection(() => validateConnectionString(dsn, 'f'));
      expect(err.message, dsn).not.toContain('hunter2');
      expect(String(err.value), dsn).not.toContain('hunter2');
      expect(err.message, dsn).toContain('***');
    }
  });

  it('maskConnectionString hides only the password', () => {
    expect(maskConnectionString('postgres://app:s3cr%40t@db:5432/app')).toBe(
      'postgres://app:***@db:5432/app',
    );
    expect(maskConnectionString('postgres://app@db/app')).toBe('postgres://app@db/app');
    expect(maskConnectionString("host=db password='a b' user=app")).toBe('host=db password=*** user=app');
    expect(maskConnectionString('postgres://db/app?password=x&user=y')).toBe(
      'postgres://db/app?password=***&user=y',
    );
  });

  it('turns key=value pairs into node-postgres settings, and passes URLs through', () => {
    expect(pgConnectionSettings('host=db port=6432 dbname=app user=u password=p', 'f')).toEqual({
      host: 'db',
      port: '6432',
      database: 'app',
      user: 'u',
      password: 'p',
    });
    expect(pgConnectionSettings('hostaddr=10.0.0.1 sslmode=disable', 'f')).toEqual({
      host: '10.0.0.1',
      sslmode: 'disable',
      ssl: false,
    });
    expect(pgConnectionSettings('postgres://h/db', 'f')).toEqual({ connectionString: 'postgres://h/db' });
  });
});

describe('every entry point validates a DSN the same way', () => {
  it('TaskQ.open rejects mysql://, naming TaskQ.open.dsn', async () => {
    const err = await TaskQ.open({ dsn: 'mysql://root:pw@db/app' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as InvalidArgumentError).field).toBe('TaskQ.open.dsn');
    expect((err as Error).message).toContain('"mysql://root:***@db/app"');
  });

  it('the settings loader (workers, TaskQ.fromEnv) applies the same rule and masks the password', () => {
    let err: unknown;
    try {
      loadWorkerSettings({ env: { TASKQ_PG_DSN: 'mysql://root:pw@db/app' } });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SettingsError);
    expect((err as Error).message).toContain('TASKQ_PG_DSN = "mysql://root:***@db/app"');
    expect((err as Error).message).toContain('must be a postgres:// or postgresql:// URL');
    expect(loadWorkerSettings({ env: { TASKQ_PG_DSN: 'host=127.0.0.1 dbname=test' } }).settings.pgDsn).toBe(
      'host=127.0.0.1 dbname=test',
    );
  });

  it('PgDriver rejects it too', () => {
    expect(rejection(() => new PgDriver({ connection: 'mysql://db/app' })).field).toBe('PgDriver.connection');
  });

  it('a key=value DSN connects to the same server as its URL', async () => {
    const url = new URL(TEST_DSN);
    const kv =
      `host=${url.hostname} port=${url.port || 5432} dbname=${url.pathname.slice(1)} ` +
      `user=${decodeURIComponent(url.username)}` +
      (url.password ? ` password='${decodeURIComponent(url.password)}'` : '');
    const driver = new PgDriver({ connection: kv });
    try {
      const { rows } = await driver.query<{ db: string }>('SELECT current_database() AS db');
      expect(rows[0]?.db).toBe(url.pathname.slice(1));
    } finally {
      await driver.close();
    }
  });
});
