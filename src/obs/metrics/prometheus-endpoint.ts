import { hardenedServer } from '../health/hardened-server.js';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

import type { Meter } from '@opentelemetry/api';
// Types only (erased): the modules themselves are optional and imported on first use.
import type { PrometheusExporter as PrometheusExporterClass } from '@opentelemetry/exporter-prometheus';
import type { MeterProvider as MeterProviderClass } from '@opentelemetry/sdk-metrics';

import { isPackageNotFound, MissingDependencyError } from '../../errors/missing-dependency-error.js';
import { TASKQ_VERSION } from '../../core/version.js';
import { bearerTokenMatches } from '../health/bearer-token.js';
import type { Logger } from '../logger.js';

/** The optional packages the Prometheus endpoint loads on first use. */
export const PROMETHEUS_PACKAGES = [
  '@opentelemetry/exporter-prometheus',
  '@opentelemetry/sdk-metrics',
] as const;

/** At most this many connections at once: scrapers are few. */
const MAX_CONNECTIONS = 16;

/** Options of {@link PrometheusEndpoint.open}. */
export interface PrometheusEndpointOptions {
  /** Bind address (`healthHost`). */
  host: string;
  /** `metricsPort` (0 = an ephemeral port, for tests). */
  port: number;
  /** `healthToken`: scrapes must send `Authorization: Bearer <token>`; null = open. */
  token: string | null;
  /** A request must arrive whole within this (`healthRequestTimeout`). */
  requestTimeoutMs: number;
  /** Request line and headers at most this large (`healthMaxHeaderBytes`). */
  maxHeaderBytes: number;
  logger: Logger;
}

/** The two optional modules, loaded once. */
async function loadExporter(): Promise<{
  PrometheusExporter: typeof PrometheusExporterClass;
  MeterProvider: typeof MeterProviderClass;
}> {
  const load = async <T>(
    name: (typeof PROMETHEUS_PACKAGES)[number],
    importer: () => Promise<T>,
  ): Promise<T> => {
    try {
      return await importer();
    } catch (err) {
      if (!isPackageNotFound(err, name)) throw err;
      throw new MissingDependencyError(
        name,
        'The Prometheus endpoint (metricsPort, taskq health metrics)',
        `npm install ${PROMETHEUS_PACKAGES.join(' ')}`,
        {
          alternative: 'register your own OpenTelemetry MeterProvider and leave metricsPort unset',
          cause: err,
        },
      );
    }
  };
  const { PrometheusExporter } = await load(
    PROMETHEUS_PACKAGES[0],
    () => import('@opentelemetry/exporter-prometheus'),
  );
  const { MeterProvider } = await load(PROMETHEUS_PACKAGES[1], () => import('@opentelemetry/sdk-metrics'));
  return { PrometheusExporter, MeterProvider };
}

/**
 * `GET /metrics` in the Prometheus text format, on a port of its own (`metricsPort`), from a meter
 * provider of its own: TaskQ's instruments are recorded on {@link meter}, and an application's own
 * global provider, if any, is left alone. Protected by `healthToken` when set; hardened like the
 * health listener (request timeout, header size, connection cap; a malformed request is dropped).
 * Needs the optional packages `@opentelemetry/exporter-prometheus` and `@opentelemetry/sdk-metrics`.
 */
export class PrometheusEndpoint {
  private constructor(
    /** The meter TaskQ's instruments are created on. */
    readonly meter: Meter,
    private readonly server: Server,
    private readonly shutdownProvider: () => Promise<void>,
  ) {}

  /**
   * Loads the exporter, binds the port and starts serving.
   * @throws MissingDependencyError when an optional package is missing; the bind error when the port is taken
   */
  static async open(o: PrometheusEndpointOptions): Promise<PrometheusEndpoint> {
    const { PrometheusExporter, MeterProvider } = await loadExporter();
    const exporter = new PrometheusExporter({ preventServerStart: true });
    const provider = new MeterProvider({ readers: [exporter] });
    const server = hardenedServer(
      {
        requestTimeoutMs: o.requestTimeoutMs,
        maxHeaderBytes: o.maxHeaderBytes,
        maxConnections: MAX_CONNECTIONS,
      },
      (req, res) => serve(req, res, o.token, (rq, rs) => exporter.getMetricsRequestHandler(rq, rs)),
    );
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(o.port, o.host, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (err) {
      await provider.shutdown().catch(() => undefined);
      throw err;
    }
    const endpoint = new PrometheusEndpoint(provider.getMeter('taskq', TASKQ_VERSION), server, () =>
      provider.shutdown(),
    );
    o.logger.info({ metrics: endpoint.address }, 'metrics-listening');
    return endpoint;
  }

  /** The bound address (with the port an ephemeral bind got). */
  get address(): { host: string; port: number } {
    const a = this.server.address() as AddressInfo;
    return { host: a.address, port: a.port };
  }

  /** Stops serving and shuts the meter provider down. */
  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
    await this.shutdownProvider().catch(() => undefined);
  }
}

function serve(
  req: IncomingMessage,
  res: ServerResponse,
  token: string | null,
  exposition: (req: IncomingMessage, res: ServerResponse) => void,
): void {
  res.setHeader('Cache-Control', 'no-store');
  const reply = (status: number, text: string): void => {
    res.writeHead(status, {
      'Content-Type': 'text/plain; charset=utf-8',
      'Content-Length': Buffer.byteLength(text),
    });
    res.end(req.method === 'HEAD' ? undefined : text);
  };
  if (token !== null && !bearerTokenMatches(req.headers.authorization, token)) {
    res.setHeader('WWW-Authenticate', 'Bearer realm="taskq-metrics"');
    return reply(401, 'a bearer token is required\n');
  }
  if (req.method !== 'GET') {
    res.setHeader('Allow', 'GET');
    return reply(405, 'only GET is allowed\n');
  }
  if ((req.url ?? '/').split('?', 1)[0] !== '/metrics')
    return reply(404, 'not found: the metrics are at /metrics\n');
  exposition(req, res);
}
