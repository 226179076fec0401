import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/** Limits of a {@link hardenedServer}. */
export interface HardenedServerLimits {
  /** A request must arrive whole (request line and headers) within this, or its connection is closed. */
  requestTimeoutMs: number;
  /** Request line and headers at most this large. */
  maxHeaderBytes: number;
  /** Connections at once. */
  maxConnections: number;
}

/**
 * An HTTP server for probes and scrapes (the health listener, the Prometheus endpoint): requests
 * bounded in time and header size, a connection cap, and a peer that drip-feeds, floods or sends
 * garbage dropped unanswered instead of getting Node's own 400/408/431 answer.
 */
export function hardenedServer(
  limits: HardenedServerLimits,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Server {
  const server = createServer(
    {
      maxHeaderSize: limits.maxHeaderBytes,
      headersTimeout: limits.requestTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.requestTimeoutMs,
      // Node checks the two timeouts above on this cadence (default 30 s).
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(limits.requestTimeoutMs / 4))),
    },
    handler,
  );
  server.maxConnections = limits.maxConnections;
  server.on('clientError', (_err, socket) => socket.destroy());
  return server;
}
