import type pg from 'pg';

import { untilAborted } from '../core/until-aborted.js';
import { pgConnectionFields } from '../db/connection-string.js';
import { CredentialUsernameChangedError } from '../errors/credential-errors.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import type { PgCredential, PgCredentialProvider } from './credential-types.js';
import { ensureSslmodeRequire } from './pg-dsn.js';

/** `provider.getPgCredential()`, given up on (with `signal`'s reason) when `signal` aborts. */
export async function fetchPgCredential(
  provider: PgCredentialProvider,
  signal?: AbortSignal,
): Promise<PgCredential> {
  signal?.throwIfAborted();
  return checkCredential(
    await untilAborted(
      Promise.resolve().then(() => provider.getPgCredential()),
      signal,
    ),
  );
}

function checkCredential(c: PgCredential): PgCredential {
  if (c === null || typeof c !== 'object' || typeof c.password !== 'string')
    throw new InvalidArgumentError(
      'getPgCredential()',
      c,
      'must resolve to { password: string, username?: string | null }',
    );
  if (c.username !== undefined && c.username !== null && typeof c.username !== 'string')
    throw new InvalidArgumentError('getPgCredential().username', c.username, 'must be a string or null');
  return c;
}

/**
 * The node-postgres config of connections authenticated by `provider`: the DSN's settings (with
 * `sslmode=require` unless it sets a mode) without its user info password, the user pinned to the
 * one the provider issues now (one fetch: a broken provider fails here, fast), and the password as a
 * function node-postgres calls for every physical connection it opens. A provider that later issues
 * another user makes that connect fail with {@link CredentialUsernameChangedError}: only a rebuild
 * (a credential reload) can change a pool's user.
 * @param resource what the config is for, in that error (`pool`, `dedicated connection`)
 */
export async function pgCredentialConfig(
  dsn: string,
  provider: PgCredentialProvider,
  resource: string,
  signal?: AbortSignal,
): Promise<pg.ClientConfig> {
  if (provider === null || typeof provider !== 'object' || typeof provider.getPgCredential !== 'function')
    throw new InvalidArgumentError('provider', provider, 'must have a getPgCredential() method');
  // node-postgres lets a connectionString override explicit fields, so the string is parsed here
  // and never passed along: a stale password in it cannot shadow the provider's.
  const fields = pgConnectionFields(ensureSslmodeRequire(dsn), 'dsn') as pg.ClientConfig;
  delete fields.password;
  const first = await fetchPgCredential(provider, signal);
  const pinned = first.username ?? null;
  if (pinned !== null) fields.user = pinned;
  const password = async (): Promise<string> => {
    // Fetched anew even for the first connection: a lazy pool may open it long after the pinning.
    const credential = await fetchPgCredential(provider);
    const user = credential.username ?? null;
    if (user !== pinned) throw new CredentialUsernameChangedError(resource, pinned, user);
    return credential.password;
  };
  return { ...fields, password };
}
