import { hardenedServer } from './hardened-server.js';
import { chmod } from 'node:fs/promises';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

import type { Logger } from '../logger.js';
import { bearerTokenMatches } from './bearer-token.js';
import { bindUnixSocket, removeUnixSocket } from './bind-unix-socket.js';
import type { ReadinessReport } from './readiness-probe.js';

/** At most this many connections per listener: probes are few, and a flood must not exhaust file descriptors. */
export const HEALTH_MAX_CONNECTIONS = 32;

/** Options of {@link HealthServer}. */
export interface HealthServerOptions {
  /** TCP listener: `healthHost` and `healthPort` (0 = ephemeral); null = none. */
  tcp: { host: string; port: number } | null;
  /**
   * Unix socket listener: `healthSocketPath`; null = none. With `required`, a path another live
   * process answers on stops the start; without it (the default path), the worker runs without the
   * socket and logs `health-socket-in-use`.
   */
  socket: { path: string; required: boolean } | null;
  /** `healthToken`: every request must send `Authorization: Bearer <token>`; null = no authentication. */
  token: string | null;
  /** `healthRequestTimeout`, ms: the request line and headers must arrive within it. */
  requestTimeoutMs: number;
  /** `healthMaxHeaderBytes`: cap on the request line and headers. */
  maxHeaderBytes: number;
  /** The worker's phase (for `/live`). */
  phase: () => string;
  /** `/ready`'s report. */
  ready: () => Promise<ReadinessReport>;
  /** `/tasks`'s report (jobs in flight, service loops), served on the Unix socket only; null = no `/tasks`. */
  tasks: (() => unknown) | null;
  logger: Logger;
}

type Listener = 'tcp' | 'socket';

/**
 * The worker's health endpoints over `node:http`: `/live` (the process and its event loop answer),
 * `/ready` (see {@link ReadinessProbe}) and, on the Unix socket only, `/tasks`. Only GET and HEAD;
 * unknown paths 404; every response closes its connection. A request whose line and headers take
 * longer than `requestTimeoutMs` or exceed `maxHeaderBytes`, or that does not parse, is dropped
 * unanswered (the connection is closed), as the reference does.
 */
export class HealthServer {
  private readonly servers: { kind: Listener; server: Server }[] = [];
  private socketIno: number | null = null;

  constructor(private readonly options: HealthServerOptions) {}

  /** The TCP listener's address once started (with the port an ephemeral bind got), else null. */
  get tcpAddress(): { host: string; port: number } | null {
    const tcp = this.servers.find((s) => s.kind === 'tcp');
    const addr = tcp?.server.address() as AddressInfo | null | undefined;
    return addr ? { host: addr.address, port: addr.port } : null;
  }

  /** The Unix socket's path while this server listens on it, else null. */
  get socketPath(): string | null {
    return this.socketIno === null ? null : (this.options.socket?.path ?? null);
  }

  /**
   * Opens the listeners. A TCP port that cannot be bound is an error (probes must not be silently
   * dead); see {@link HealthServerOptions.socket} for the socket.
   */
  async start(): Promise<void> {
    const o = this.options;
    try {
      if (o.tcp) {
        const server = this.create('tcp');
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(o.tcp!.port, o.tcp!.host, () => {
            server.off('error', reject);
            resolve();
          });
        });
        this.servers.push({ kind: 'tcp', server });
      }
      if (o.socket) await this.startSocket(o.socket.path, o.socket.required);
    } catch (err) {
      await this.stop();
      throw err;
    }
    o.logger.info({ tcp: this.tcpAddress, socket: this.socketPath }, 'health-listening');
  }

  private async startSocket(path: string, required: boolean): Promise<void> {
    const server = this.create('socket');
    const binding = await bindUnixSocket(server, path);
    if (!binding.bound) {
      if (required)
        throw new Error(
          `the health socket ${path} is in use by another live process: give each worker its own ` +
            'TASKQ_HEALTH_SOCKET_PATH, or set TASKQ_HEALTH_ENABLED=false',
        );
      this.options.logger.warn({ path }, 'health-socket-in-use');
      return;
    }
    this.servers.push({ kind: 'socket', server });
    this.socketIno = binding.ino;
    // /tasks shows code structure: only the socket's owner may read it.
    if (this.options.tasks !== null) await chmod(path, 0o600);
  }

  /** Closes the listeners and their connections, and removes the socket file. */
  async stop(): Promise<void> {
    const servers = this.servers.splice(0);
    await Promise.all(
      servers.map(
        ({ server }) =>
          new Promise<void>((resolve) => {
            server.close(() => resolve());
            server.closeAllConnections();
          }),
      ),
    );
    if (this.socketIno !== null && this.options.socket) {
      await removeUnixSocket(this.options.socket.path, this.socketIno);
      this.socketIno = null;
    }
  }

  private create(kind: Listener): Server {
    const o = this.options;
    return hardenedServer(
      {
        requestTimeoutMs: o.requestTimeoutMs,
        maxHeaderBytes: o.maxHeaderBytes,
        maxConnections: HEALTH_MAX_CONNECTIONS,
      },
      (req, res) => void this.handle(kind, req, res),
    );
  }

  private async handle(kind: Listener, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const o = this.options;
    res.setHeader('Connection', 'close');
    res.setHeader('Cache-Control', 'no-store');
    if (o.token !== null && !bearerTokenMatches(req.headers.authorization, o.token)) {
      res.setHeader('WWW-Authenticate', 'Bearer realm="taskq-health"');
      return send(req, res, 401, { error: 'a bearer token is required' });
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      return send(req, res, 405, { error: 'only GET and HEAD are allowed' });
    }
    const path = (req.url ?? '/').split('?', 1)[0];
    try {
      if (path === '/live') return send(req, res, 200, { status: 'live', phase: o.phase() });
      if (path === '/ready') {
        const report = await o.ready();
        return send(req, res, report.status === 'ready' ? 200 : 503, report);
      }
      // Diagnostics are for someone on the machine: never on the network listener.
      if (path === '/tasks' && kind === 'socket' && o.tasks !== null) return send(req, res, 200, o.tasks());
    } catch (err) {
      o.logger.warn({ err, path }, 'health-request-failed');
      return send(req, res, 500, { error: 'internal error' });
    }
    return send(req, res, 404, { error: 'not found' });
  }
}

function send(req: IncomingMessage, res: ServerResponse, status: number, body: unknown): void {
  const text = `${JSON.stringify(body)}\n`;
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
  });
  res.end(req.method === 'HEAD' ? undefined : text);
}
