// A rotating Postgres credential provider over HashiCorp Vault's database secrets engine: dynamic
// users with a lease. It caches the credential, renews the lease while it is renewable, and asks for
// a new user when the lease nears its end. A new user needs new pools (a pool keeps its user for
// life), so `onRotate` is where you trigger a credential reload. Examples import the package source;
// in your code, import from 'taskq' instead.
import type { PgCredential, PgCredentialProvider } from '../../src/index.js';

/** Options of {@link VaultPgProvider}. */
export interface VaultPgOptions {
  /** Vault's address, e.g. `https://vault.internal:8200`. */
  address: string;
  /** A Vault token allowed to read `<mount>/creds/<role>` and renew its leases. */
  token: string;
  /** The database role to issue users for. */
  role: string;
  /** The secrets engine's mount path. Default `database`. */
  mount?: string;
  /** Renew (or replace) the credential when less than this share of its lease is left. Default 1/3. */
  refreshShare?: number;
  /** Called after a new user was issued: reload the connections that still use the old one. */
  onRotate?: (username: string) => void;
  /** The HTTP client (tests pass their own). Default: the global `fetch`. */
  fetch?: typeof fetch;
}

interface Lease {
  credential: PgCredential;
  leaseId: string;
  renewable: boolean;
  /** When the lease ends, in ms since the epoch. */
  expiresAt: number;
  /** How long the lease was granted for, in ms. */
  durationMs: number;
}

/** Vault's answer to a creds read or a lease renewal (the fields used here). */
interface VaultLease {
  lease_id: string;
  lease_duration: number;
  renewable: boolean;
  data?: { username: string; password: string };
}

/** A {@link PgCredentialProvider} backed by Vault dynamic database credentials. */
export class VaultPgProvider implements PgCredentialProvider {
  private lease: Lease | null = null;
  /** One request at a time: concurrent connects share it instead of each asking Vault. */
  private pending: Promise<Lease> | null = null;
  private readonly fetch: typeof fetch;

  constructor(private readonly options: VaultPgOptions) {
    this.fetch = options.fetch ?? globalThis.fetch;
  }

  /** Called by TaskQ for every new physical connection: served from the cache while it is fresh. */
  async getPgCredential(): Promise<PgCredential> {
    const lease = this.lease;
    if (lease && !this.nearExpiry(lease)) return lease.credential;
    this.pending ??= this.refresh(lease).finally(() => (this.pending = null));
    return (await this.pending).credential;
  }

  private nearExpiry(lease: Lease): boolean {
    return lease.expiresAt - Date.now() < lease.durationMs * (this.options.refreshShare ?? 1 / 3);
  }

  /** Renews the current lease when Vault allows it (same user), else issues a new user. */
  private async refresh(current: Lease | null): Promise<Lease> {
    if (current?.renewable && current.expiresAt > Date.now()) {
      try {
        const renewed = await this.call('PUT', 'sys/leases/renew', { lease_id: current.leaseId });
        // Vault caps renewals at the lease's max TTL: a renewal that gains nothing means a new user.
        if (renewed.lease_duration * 1000 > current.durationMs / 10) {
          this.lease = { ...current, ...this.timing(renewed) };
          return this.lease;
        }
      } catch {
        // The lease may have been revoked: fall through to a new user.
      }
    }
    const issued = await this.call('GET', `${this.options.mount ?? 'database'}/creds/${this.options.role}`);
    if (!issued.data) throw new Error(`Vault returned no credential for role ${this.options.role}`);
    this.lease = {
      credential: { username: issued.data.username, password: issued.data.password },
      leaseId: issued.lease_id,
      ...this.timing(issued),
    };
    if (current) this.options.onRotate?.(issued.data.username);
    return this.lease;
  }

  private timing(v: VaultLease): { expiresAt: number; durationMs: number; renewable: boolean } {
    const durationMs = v.lease_duration * 1000;
    return { expiresAt: Date.now() + durationMs, durationMs, renewable: v.renewable };
  }

  private async call(method: 'GET' | 'PUT', path: string, body?: object): Promise<VaultLease> {
    const res = await this.fetch(`${this.options.address}/v1/${path}`, {
      method,
      headers: { 'X-Vault-Token': this.options.token, 'Content-Type': 'application/json' },
      ...(body ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(10_000),
    });
    if (!res.ok) throw new Error(`Vault ${method} ${path}: HTTP ${res.status}`);
    return (await res.json()) as VaultLease;
  }
}
