import { generateKeyPairSync } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import Provider from 'oidc-provider';

/** A real OpenID Connect provider for tests (`oidc-provider`, its development sign-in pages). */
export interface TestOidcIdp {
  /** The issuer URL, e.g. `http://127.0.0.1:5123`. */
  issuer: string;
  /** The one registered client. */
  clientId: string;
  /** Its secret. */
  clientSecret: string;
  /** Stops the provider. */
  close(): Promise<void>;
}

/**
 * Starts an `oidc-provider` on a free port with one static client for `redirectUri`. Any login
 * name signs in (the development interactions accept any password); `groups` says each login's
 * groups, which the ID token carries in its `groups` claim (scope `groups`).
 */
export async function startOidcIdp(
  redirectUris: string[],
  groups: Record<string, string[]>,
): Promise<TestOidcIdp> {
  // Listen first, then build the provider for the port we got: no window for another process.
  const server: Server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const port = (server.address() as AddressInfo).port;
  const issuer = `http://127.0.0.1:${port}`;
  const clientId = 'taskq-admin-test';
  const clientSecret = 'test-client-secret-0123456789abcdef';
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    claims: { openid: ['sub'], email: ['email'], groups: ['groups'] },
    // Scope claims in the ID token itself (the admin UI reads groups from there, not userinfo).
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: true } },
    pkce: { required: () => true },
    cookies: { keys: ['test-cookie-key-0123456789abcdef'] },
    // Own signing key and lifetimes, so the provider does not warn about its development defaults.
    jwks: {
      keys: [
        {
          ...generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }),
          kid: 'test',
        },
      ],
    },
    ttl: {
      AccessToken: 600,
      AuthorizationCode: 60,
      IdToken: 600,
      Interaction: 600,
      Session: 600,
      Grant: 600,
    },
    findAccount: (_ctx, sub) => ({
      accountId: sub,
      claims: () => ({ sub, email: `${sub}@example.test`, groups: groups[sub] ?? [] }),
    }),
  });
  server.on('request', provider.callback());
  return {
    issuer,
    clientId,
    clientSecret,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
