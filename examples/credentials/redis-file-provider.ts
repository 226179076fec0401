/**
 * A RedisCredentialProvider that reads `{ "username": "...", "password": "..." }` from a file a
 * sidecar (Vault Agent, a Kubernetes secret mount) rewrites when it rotates the password. The
 * fault test test/faults/redis-credential-rotation.test.ts runs a worker with it.
 */
import { readFile } from 'node:fs/promises';

import type { RedisCredential, RedisCredentialProvider } from '../../src/index.js';

export function fileRedisCredentialProvider(path: string): RedisCredentialProvider {
  return {
    // Read at every (re)connect and every reload: the file is the one source of truth.
    async getRedisCredential(): Promise<RedisCredential> {
      const { username, password } = JSON.parse(await readFile(path, 'utf8')) as RedisCredential;
      return { username: username ?? null, password };
    },
  };
}
