// A worker whose Postgres users come from Vault (./vault-provider.ts). Vault issues a new user when a
// lease cannot be renewed any more; the worker then rebuilds its pools with it. Examples import the
// package source; in your code, import from 'taskq' and 'taskq/worker' instead.
import { actor } from '../../src/index.js';
import { Worker } from '../../src/worker/index.js';
import { VaultPgProvider } from './vault-provider.js';

const sendEmail = actor({ name: 'send_email' }, async () => undefined);

let worker: Worker | null = null;
const provider = new VaultPgProvider({
  address: process.env.VAULT_ADDR ?? 'https://vault.internal:8200',
  token: process.env.VAULT_TOKEN ?? '',
  role: 'taskq-worker',
  // New user: new pools. Old connections finish their statements, then close.
  onRotate: () => void worker?.reloadCredentials(),
});

worker = new Worker({
  actors: [sendEmail],
  // No password in the DSN: the provider supplies user and password.
  settings: { pgDsn: 'postgres://db.internal:5432/app?sslmode=verify-full', queues: ['default'] },
  pgCredentialProvider: provider,
});
await worker.start();
