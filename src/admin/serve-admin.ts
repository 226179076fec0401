import Fastify, { type FastifyInstance } from 'fastify';

import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { adminPlugin } from './admin-plugin.js';
import { ADMIN_OPTION_KEYS, type AdminOptions } from './admin-options.js';
import { checkKnownKeys } from '../core/closest-name.js';

/** Options of {@link serveAdmin}: the plugin's, plus where to listen. */
export interface ServeAdminOptions extends AdminOptions {
  /** `TASKQ_ADMIN_HOST`: bind address. Default `0.0.0.0`. */
  host?: string;
  /** `TASKQ_ADMIN_PORT`: TCP port, 0 for a free one. Default 8080. */
  port?: number;
  /** Path the UI is served under, e.g. `/admin`. Default: the root. */
  prefix?: string;
}

/**
 * The keys of {@link ServeAdminOptions}; any other is refused before anything listens (`prot: 8081`
 * would otherwise start on the default port).
 */
export const SERVE_ADMIN_OPTION_KEYS: readonly string[] = [...ADMIN_OPTION_KEYS, 'host', 'port', 'prefix'];

/** A running standalone admin server. */
export interface AdminServer {
  /** The Fastify instance (for `inject` in tests, or more routes). */
  app: FastifyInstance;
  /** The URL it listens on, e.g. `http://127.0.0.1:8080`. */
  url: string;
  /** The port it listens on (the chosen one when asked for 0). */
  port: number;
  /** Stops listening and ends open streams; the TaskQ client stays open (it is yours). */
  close(): Promise<void>;
}

/**
 * Serves the admin UI on its own Fastify server (what `taskq ui serve` runs). Fails closed like
 * the plugin: without authentication outside dev it throws before listening.
 * @throws AdminAuthRequiredError, InvalidArgumentError
 */
export async function serveAdmin(options: ServeAdminOptions): Promise<AdminServer> {
  if (options === null || typeof options !== 'object')
    throw new InvalidArgumentError('options', options, 'must be an object with at least { tq }');
  // Concealed like the plugin's check: a misspelt `tokn` holds the token.
  checkKnownKeys(options, SERVE_ADMIN_OPTION_KEYS, 'options', 'an option of serveAdmin');
  const { host = '0.0.0.0', port = 8080, prefix = '', ...pluginOptions } = options;
  // Fastify's own request log would record URLs (job ids, filters) at info; TaskQ logs its own events.
  const app = Fastify({ logger: false, forceCloseConnections: true });
  await app.register(adminPlugin, { ...pluginOptions, prefix });
  await app.listen({ host, port });
  const address = app.server.address();
  const bound = typeof address === 'object' && address !== null ? address.port : port;
  const shownHost =
    host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  return {
    app,
    url: `http://${shownHost}:${bound}${prefix}`,
    port: bound,
    close: () => app.close(),
  };
}
