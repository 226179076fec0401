import { describe, expect, it } from 'vitest';

import { splitSqlStatements } from '../../src/migrations/split-statements.js';

describe('splitSqlStatements', () => {
  it('splits on top-level semicolons and trims', () => {
    expect(splitSqlStatements('SELECT 1;\n  SELECT 2 ;SELECT 3')).toEqual([
      'SELECT 1',
      'SELECT 2',
      'SELECT 3',
    ]);
  });

  it('keeps semicolons inside strings, identifiers, dollar quotes and comments', () => {
    const sql = [
      "INSERT INTO t VALUES ('a;b', 'it''s; fine', E'back\\'slash;');",
      'CREATE TABLE "odd;name" (x int);',
      'CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN 1; END $$;',
      'CREATE FUNCTION g() RETURNS int LANGUAGE plpgsql AS $body$ BEGIN RETURN $1; END $body$;',
      '/* a; /* nested; */ still comment; */ SELECT 4; -- trailing; comment',
    ].join('\n');
    expect(splitSqlStatements(sql)).toEqual([
      "INSERT INTO t VALUES ('a;b', 'it''s; fine', E'back\\'slash;')",
      'CREATE TABLE "odd;name" (x int)',
      'CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN 1; END $$',
      'CREATE FUNCTION g() RETURNS int LANGUAGE plpgsql AS $body$ BEGIN RETURN $1; END $body$',
      '/* a; /* nested; */ still comment; */ SELECT 4',
    ]);
  });

  it('drops pieces that hold only comments or whitespace', () => {
    expect(splitSqlStatements('-- taskq:no-transaction\n-- only a comment;\n;\n  ;')).toEqual([]);
    expect(splitSqlStatements('-- header\nSELECT 1;\n-- footer\n')).toEqual(['-- header\nSELECT 1']);
  });

  it('does not treat a parameter or an identifier with $ as a dollar quote', () => {
    expect(splitSqlStatements('SELECT $1; SELECT a$b$c FROM t; SELECT 2')).toEqual([
      'SELECT $1',
      'SELECT a$b$c FROM t',
      'SELECT 2',
    ]);
  });
});
