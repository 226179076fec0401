import { Command } from 'commander';

import { openClientBackend } from '../backend/open-backend.js';
import { MissingDependencyError } from '../errors/missing-dependency-error.js';
import { FleetGauges } from '../obs/metrics/fleet-gauges.js';
import { PrometheusEndpoint } from '../obs/metrics/prometheus-endpoint.js';
import { createLogger } from '../obs/logger.js';
import { loadWorkerSettings, SettingsError } from '../settings/load-worker-settings.js';
import {
  cliPgSource,
  PG_CREDENTIAL_PROVIDER_OPTION,
  resolveConnection,
  type ConnectionFlags,
} from './connection-options.js';
import { CliExit, stopped, type CliIo } from './io.js';

/** Flags of `taskq health metrics`. */
interface MetricsFlags extends ConnectionFlags {
  port?: string;
  host?: string;
}

/** Parses `--port` (0–65535; 0 = a free port). */
function parsePort(text: string | undefined): number {
  if (text === undefined) throw new CliExit(2, '--port is required (the TCP port to serve /metrics on)');
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isInteger(n) || n > 65_535)
    throw new CliExit(2, `--port: ${JSON.stringify(text)} is invalid: must be an integer from 0 to 65535`);
  return n;
}

/**
 * `taskq health metrics --port N`: a standalone Prometheus exporter of the fleet gauges (queue depth
 * by status, oldest pending age, alive workers per queue, reservation slots, live leaders), read from
 * the database on scrape, at most once per `TASKQ_QUEUE_DEPTH_INTERVAL` /
 * `TASKQ_RESERVATION_SLOTS_INTERVAL`. It keeps those series alive when every worker is down, which
 * is when the "queue without workers" alert must fire. `TASKQ_HEALTH_TOKEN` protects it; the
 * other settings it reads are the worker's (`TASKQ_LOCK_LEASE` decides when a worker counts as
 * gone, `TASKQ_HEALTH_REQUEST_TIMEOUT` and `TASKQ_HEALTH_MAX_HEADER_BYTES` harden it).
 */
export function healthCommand(io: CliIo): Command {
  const cmd = new Command('health').description('health and metrics endpoints');
  cmd
    .command('metrics')
    .description('serve the fleet gauges for Prometheus on --port until SIGINT/SIGTERM')
    .option('--port <port>', 'TCP port of GET /metrics (0 = a free port, printed at start)')
    .option('--host <host>', 'bind address (default: $TASKQ_HEALTH_HOST or 0.0.0.0)')
    .option('--dsn <dsn>', 'Postgres connection string (default: $TASKQ_PG_DSN)')
    .option(...PG_CREDENTIAL_PROVIDER_OPTION)
    .option('--schema <schema>', 'schema (default: $TASKQ_SCHEMA_NAME or taskq)')
    .action(async (flags: MetricsFlags) => {
      const port = parsePort(flags.port);
      const { dsn, schema } = resolveConnection(flags, io);
      let settings;
      try {
        ({ settings } = loadWorkerSettings({
          env: io.env,
          overrides: flags.host !== undefined ? { healthHost: flags.host } : {},
        }));
      } catch (err) {
        if (err instanceof SettingsError) throw new CliExit(2, err.message);
        throw err;
      }
      const logger = createLogger({ level: settings.logLevel, format: settings.logFormat });
      const backend = await openClientBackend({
        ...(await cliPgSource(flags, io, dsn as string, 2)),
        schema,
        maxPoolSize: 2,
        field: '--dsn',
      });
      let endpoint: PrometheusEndpoint;
      try {
        await backend.verifySchema();
        endpoint = await PrometheusEndpoint.open({
          host: settings.healthHost,
          port,
          token: settings.healthToken,
          requestTimeoutMs: settings.healthRequestTimeoutMs,
          maxHeaderBytes: settings.healthMaxHeaderBytes,
          logger,
        });
      } catch (err) {
        await backend.close();
        if (err instanceof MissingDependencyError) throw new CliExit(2, err.message);
        if (err instanceof Error && 'code' in err && err.code === 'EADDRINUSE')
          throw new CliExit(2, `--port ${port}: the port is in use by another process`);
        throw err;
      }
      new FleetGauges(endpoint.meter, {
        observe: (request) => backend.observeFleet(request),
        request: { aliveWithinMs: settings.lockLeaseMs, keyedReservationBases: [] },
        queueDepthIntervalMs: settings.queueDepthIntervalMs,
        reservationSlotsIntervalMs: settings.reservationSlotsIntervalMs,
        logger,
      });
      const { host, port: bound } = endpoint.address;
      io.out(`serving the fleet gauges of schema ${schema} at http://${host}:${bound}/metrics`);
      await stopped(io);
      await endpoint.close();
      await backend.close();
    });
  return cmd;
}
