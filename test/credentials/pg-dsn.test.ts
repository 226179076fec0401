import { describe, expect, it } from 'vitest';

import { enrichPgDsn, ensureSslmodeRequire } from '../../src/credentials/pg-dsn.js';
import { pgConnectionFields } from '../../src/db/connection-string.js';
import { InvalidArgumentError } from '../../src/errors/invalid-argument-error.js';

describe('ensureSslmodeRequire', () => {
  it.each([
    ['postgres://u@h/db', 'postgres://u@h/db?sslmode=require'],
    ['postgres://u@h/db?application_name=a', 'postgres://u@h/db?application_name=a&sslmode=require'],
    ['postgres://u@h/db?sslmode=disable', 'postgres://u@h/db?sslmode=disable'],
    ['postgres://u@h/db?sslmode=verify-full&x=1', 'postgres://u@h/db?sslmode=verify-full&x=1'],
    ['postgresql://u:p@h:5432/db?sslmode=verify-ca', 'postgresql://u:p@h:5432/db?sslmode=verify-ca'],
    ['postgres://h', 'postgres://h?sslmode=require'],
    ['host=h dbname=db', 'host=h dbname=db sslmode=require'],
    ['host=h sslmode=disable', 'host=h sslmode=disable'],
    ["host=h sslmode='verify-full'", "host=h sslmode='verify-full'"],
  ])('%s → %s', (dsn, expected) => {
    expect(ensureSslmodeRequire(dsn)).toBe(expected);
  });

  it('rejects what is not a connection string, naming dsn', () => {
    expect(() => ensureSslmodeRequire('mysql://h/db')).toThrow(InvalidArgumentError);
    expect(() => ensureSslmodeRequire('mysql://h/db')).toThrow(/^dsn: /);
  });
});

describe('enrichPgDsn', () => {
  it.each([
    // The password goes into the user info, percent-encoded; the DSN's user stays.
    ['postgres://app@h/db', { password: 'p@ss/w:rd' }, 'postgres://app:p%40ss%2Fw%3Ard@h/db?sslmode=require'],
    // A stale password is replaced, in the user info and in the query.
    [
      'postgres://app:old@h/db?password=older&sslmode=disable',
      { password: 'new' },
      'postgres://app:new@h/db?sslmode=disable',
    ],
    // A username from the provider replaces the DSN's; a query user= is dropped (shadowed).
    [
      'postgres://app@h/db?user=q&sslmode=verify-full',
      { password: 'x', username: 'v-token-1' },
      'postgres://v-token-1:x@h/db?sslmode=verify-full',
    ],
    // A query user with no user info user is the one that connects: kept.
    ['postgres://h/db?user=q', { password: 'x' }, 'postgres://:x@h/db?user=q&sslmode=require'],
    // key=value: the password set (quoted when it must be), the user when given.
    [
      'host=h user=app dbname=db',
      { password: 'a b' },
      "host=h user=app dbname=db password='a b' sslmode=require",
    ],
    [
      'host=h password=old sslmode=disable',
      { password: "it's", username: 'v1' },
      "host=h password='it\\'s' sslmode=disable user=v1",
    ],
  ])('%s with %o → %s', (dsn, credential, expected) => {
    expect(enrichPgDsn(dsn, credential)).toBe(expected);
  });

  it('writes what node-postgres reads back as the same credential', () => {
    const fields = pgConnectionFields(
      enrichPgDsn('postgres://app@h/db?password=stale', { password: 'p@ss w%rd', username: 'r/ole' }),
      'dsn',
    );
    expect(fields).toMatchObject({ user: 'r/ole', password: 'p@ss w%rd', host: 'h', database: 'db' });
    const kv = pgConnectionFields(enrichPgDsn('host=h dbname=db', { password: "x' y\\z" }), 'dsn');
    expect(kv).toMatchObject({ password: "x' y\\z", host: 'h', database: 'db', sslmode: 'require' });
  });
});
