/**
 * examples/credentials/vault-provider.ts (docs/credentials.md) against a fake Vault: the credential
 * is cached while its lease is fresh, renewed (same user) when it nears its end, and replaced by a
 * new user (with `onRotate`) once Vault stops extending it. The clock is real: leases are given in
 * seconds and the test waits on conditions, never on a duration.
 */
import { describe, expect, it } from 'vitest';

import { VaultPgProvider } from '../../examples/credentials/vault-provider.js';

/** A fake Vault: `creds` issues user-N; `renew` grants `renewSeconds` (0 = at its max TTL). */
function fakeVault(): { fetch: typeof fetch; calls: string[]; leaseSeconds: number; renewSeconds: number } {
  let issued = 0;
  const state = {
    calls: [] as string[],
    leaseSeconds: 3600,
    renewSeconds: 3600,
    fetch: (async (url: string | URL, init?: RequestInit) => {
      const path = new URL(String(url)).pathname;
      state.calls.push(`${init?.method} ${path}`);
      expect(new Headers(init?.headers).get('X-Vault-Token')).toBe('t0ken');
      const body =
        path === '/v1/database/creds/app'
          ? {
              lease_id: `database/creds/app/${++issued}`,
              lease_duration: state.leaseSeconds,
              renewable: true,
              data: { username: `user-${issued}`, password: `pw-${issued}` },
            }
          : { lease_id: 'x', lease_duration: state.renewSeconds, renewable: true };
      return new Response(JSON.stringify(body), { status: 200 });
    }) as typeof fetch,
  };
  return state;
}

describe('examples/credentials/vault-provider.ts', () => {
  it('caches, renews near expiry, and issues a new user when renewal gains nothing', async () => {
    const vault = fakeVault();
    const rotated: string[] = [];
    const provider = new VaultPgProvider({
      address: 'http://vault.test:8200',
      token: 't0ken',
      role: 'app',
      fetch: vault.fetch,
      // Every lease counts as near its end: each call renews or replaces.
      refreshShare: 1.01,
      onRotate: (u) => rotated.push(u),
    });
    const [a, b] = await Promise.all([provider.getPgCredential(), provider.getPgCredential()]);
    expect(a).toEqual({ username: 'user-1', password: 'pw-1' });
    expect(b).toBe(a);
    expect(vault.calls).toEqual(['GET /v1/database/creds/app']);

    expect(await provider.getPgCredential()).toEqual(a);
    expect(vault.calls.at(-1)).toBe('PUT /v1/sys/leases/renew');

    vault.renewSeconds = 0;
    expect(await provider.getPgCredential()).toEqual({ username: 'user-2', password: 'pw-2' });
    expect(rotated).toEqual(['user-2']);
  });

  it('serves the cached credential while the lease is fresh', async () => {
    const vault = fakeVault();
    const provider = new VaultPgProvider({
      address: 'http://v',
      token: 't0ken',
      role: 'app',
      fetch: vault.fetch,
    });
    for (let i = 0; i < 5; i++) await provider.getPgCredential();
    expect(vault.calls).toEqual(['GET /v1/database/creds/app']);
  });
});
