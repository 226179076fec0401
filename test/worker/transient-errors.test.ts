/**
 * The transient-error classifier every guarded loop uses (docs/maintenance.md: "retries transient
 * Postgres errors (connection resets, restarts, statement timeouts, deadlocks — not authentication
 * failures)"). Mostly constructed errors carrying a `code`, the way node-postgres and Node's
 * sockets report them; a few real ones from Postgres and a refused socket at the end.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';

import { isTransientError } from '../../src/db/transient-errors.js';
import { TEST_DSN } from '../helpers/db.js';

/** An error shaped like node-postgres's DatabaseError / Node's system errors: a message and a code. */
function withCode(code: string, message = `error ${code}`): Error {
  return Object.assign(new Error(message), { code });
}

describe('isTransientError', () => {
  describe('Postgres SQLSTATEs', () => {
    it.each([
      ['08000', 'connection_exception'],
      ['08001', 'sqlclient_unable_to_establish_sqlconnection'],
      ['08003', 'connection_does_not_exist'],
      ['08004', 'sqlserver_rejected_establishment_of_sqlconnection'],
      ['08006', 'connection_failure'],
      ['08007', 'transaction_resolution_unknown'],
      ['57P01', 'admin_shutdown (server restarting)'],
      ['57P02', 'crash_shutdown'],
      ['57P03', 'cannot_connect_now (starting up / recovery)'],
      ['57014', 'query_canceled (statement timeout)'],
      ['40001', 'serialization_failure'],
      ['40P01', 'deadlock_detected'],
      ['53300', 'too_many_connections'],
      ['53400', 'configuration_limit_exceeded'],
      ['25P03', 'idle_in_transaction_session_timeout'],
      ['57P05', 'idle_session_timeout'],
    ])('%s (%s) is transient', (code) => {
      expect(isTransientError(withCode(code))).toBe(true);
    });

    // Retrying a bad password silently would hide a misconfiguration: it must surface.
    it.each([
      ['28P01', 'invalid_password'],
      ['28000', 'invalid_authorization_specification'],
    ])('%s (%s) is not transient', (code) => {
      expect(isTransientError(withCode(code, 'password authentication failed for user "x"'))).toBe(false);
    });

    it.each([
      ['42601', 'syntax_error'],
      ['42P01', 'undefined_table'],
      ['23505', 'unique_violation'],
      ['22P02', 'invalid_text_representation'],
      ['42501', 'insufficient_privilege'],
      ['XX000', 'internal_error'],
      ['08P01', 'protocol_violation'],
    ])('%s (%s), a bug or a data problem, is not transient', (code) => {
      expect(isTransientError(withCode(code))).toBe(false);
    });
  });

  describe('Node socket codes', () => {
    it.each([
      'ECONNRESET',
      'ECONNREFUSED',
      'ETIMEDOUT',
      'EPIPE',
      'ENOTFOUND',
      'EAI_AGAIN',
      'EHOSTUNREACH',
      'ENETUNREACH',
    ])('%s is transient', (code) => {
      expect(isTransientError(withCode(code, `connect ${code} 127.0.0.1:5432`))).toBe(true);
    });

    it.each(['EACCES', 'ENOENT', 'ERR_INVALID_ARG_TYPE'])('%s is not transient', (code) => {
      expect(isTransientError(withCode(code))).toBe(false);
    });
  });

  describe('errors without a code', () => {
    it.each([
      'Connection terminated unexpectedly',
      'Connection terminated due to connection timeout',
      'Client has encountered a connection error and is not queryable',
      'timeout exceeded when trying to connect',
      'Query read timeout',
      'Cannot use a pool after calling end on the pool',
    ])('node-postgres’s “%s” is transient', (message) => {
      expect(isTransientError(new Error(message))).toBe(true);
    });

    it('a TimeoutError (AbortSignal.timeout) is transient', () => {
      expect(isTransientError(new DOMException('The operation timed out.', 'TimeoutError'))).toBe(true);
    });

    it('ordinary errors and non-errors are not transient', () => {
      expect(isTransientError(new Error('boom'))).toBe(false);
      expect(isTransientError(new TypeError("Cannot read properties of undefined (reading 'id')"))).toBe(
        false,
      );
      expect(isTransientError(new RangeError('Invalid array length'))).toBe(false);
      for (const v of [null, undefined, 'ECONNRESET', 57014, { code: 42 }, {}]) {
        expect(isTransientError(v)).toBe(false);
      }
    });

    it('a plain object with a transient code counts (some drivers reject with non-Error objects)', () => {
      expect(isTransientError({ code: '57P01', message: 'terminating connection' })).toBe(true);
    });
  });

  describe('wrapped errors', () => {
    it('looks through `cause` (errors re-thrown with `{ cause }`)', () => {
      expect(isTransientError(new Error('claim failed', { cause: withCode('ECONNRESET') }))).toBe(true);
      expect(
        isTransientError(new Error('outer', { cause: new Error('middle', { cause: withCode('40P01') }) })),
      ).toBe(true);
      expect(isTransientError(new Error('claim failed', { cause: withCode('28P01') }))).toBe(false);
    });

    it('does not loop forever on a self-referencing cause', () => {
      const err = new Error('self') as Error & { cause?: unknown };
      err.cause = err;
      expect(isTransientError(err)).toBe(false);
    });
  });

  describe('real errors', () => {
    it('a statement timeout from Postgres is transient; a syntax error is not', async () => {
      const client = new pg.Client({ connectionString: TEST_DSN });
      await client.connect();
      try {
        await client.query('SET statement_timeout = 50');
        const timeout = await client.query('SELECT pg_sleep(10)').then(
          () => null,
          (e: unknown) => e,
        );
        expect((timeout as { code?: string }).code).toBe('57014');
        expect(isTransientError(timeout)).toBe(true);
        const syntax = await client.query('SELEC 1').then(
          () => null,
          (e: unknown) => e,
        );
        expect((syntax as { code?: string }).code).toBe('42601');
        expect(isTransientError(syntax)).toBe(false);
      } finally {
        await client.end();
      }
    });

    it('a refused connection is transient', async () => {
      // Port 1 on loopback: nothing listens there, so the kernel refuses at once.
      const client = new pg.Client({ host: '127.0.0.1', port: 1, user: 'postgres', database: 'test' });
      client.on('error', () => undefined);
      const err = await client.connect().then(
        () => null,
        (e: unknown) => e,
      );
      await client.end().catch(() => undefined);
      expect((err as { code?: string }).code).toBe('ECONNREFUSED');
      expect(isTransientError(err)).toBe(true);
    });
  });
});
