/** A Postgres credential: the password, and the user when the provider issues one (Vault dynamic roles). */
export interface PgCredential {
  /** The password for the next physical connection. */
  readonly password: string;
  /** The role to connect as; overrides the DSN's user when set. */
  readonly username?: string | null;
}

/**
 * Where Postgres credentials come from (Vault, a cloud token service, a file a sidecar rewrites).
 * TaskQ calls it once when it builds a pool or connection factory (to pin the user and fail fast),
 * then once per physical connection it opens; cache near expiry inside the provider.
 */
export interface PgCredentialProvider {
  /** The credential to use now. */
  getPgCredential(): Promise<PgCredential>;
}

/** A Redis ACL credential. */
export interface RedisCredential {
  /** ACL user; `null` or absent for the `default` user (`requirepass`). */
  readonly username?: string | null;
  /** The password. */
  readonly password: string;
}

/** Where Redis credentials come from; called whenever TaskQ (re)authenticates a Redis connection it owns. */
export interface RedisCredentialProvider {
  /** The credential to use now. */
  getRedisCredential(): Promise<RedisCredential>;
}
