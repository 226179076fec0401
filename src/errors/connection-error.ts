import { TaskQError } from './taskq-error.js';

/**
 * Why a connection to Postgres could not be made: `refused` (nothing listens at that host and
 * port), `host-not-found` (DNS), `unreachable` (no route), `timeout`, `auth-failed` (user, password
 * or pg_hba.conf), `database-not-found`, `server-unavailable` (starting up, shutting down, out of
 * connection slots), `ssl` (TLS negotiation or certificate).
 */
export type ConnectionFailureReason =
  | 'refused'
  | 'host-not-found'
  | 'unreachable'
  | 'timeout'
  | 'auth-failed'
  | 'database-not-found'
  | 'server-unavailable'
  | 'ssl';

/** Where the connection string can be corrected; every hint ends with it. */
const WHERE_THE_DSN_IS = 'the DSN (TASKQ_PG_DSN, --dsn, or the dsn option of TaskQ.open)';

const HINTS: Readonly<Record<ConnectionFailureReason, string>> = {
  refused: `Check that the server is running and listens on that host and port, and that ${WHERE_THE_DSN_IS} points at it.`,
  'host-not-found': `Check the host name in ${WHERE_THE_DSN_IS}.`,
  unreachable: `Check the host in ${WHERE_THE_DSN_IS} and the network between here and the server.`,
  timeout: `Check that the server is running, the host and port in ${WHERE_THE_DSN_IS}, and that no firewall drops the connection.`,
  'auth-failed': `Check the user and password in ${WHERE_THE_DSN_IS}, and the server's pg_hba.conf.`,
  'database-not-found': `Create the database (createdb), or fix its name in ${WHERE_THE_DSN_IS}.`,
  'server-unavailable': `The server is starting up, shutting down or out of connection slots; try again shortly, or check ${WHERE_THE_DSN_IS}.`,
  ssl: `Check sslmode and the certificates in ${WHERE_THE_DSN_IS}.`,
};

/**
 * TaskQ could not open a connection to Postgres. Thrown by every entry point that connects (the
 * client, workers, the CLI, migrations) in place of node-postgres's or the socket's error, which is
 * kept as `cause`. Failures on a connection that was open (a query error, a server restart
 * mid-query) are not this error.
 */
export class ConnectionError extends TaskQError {
  /** Why the connection failed. */
  readonly reason: ConnectionFailureReason;
  /** The server that was tried (the connection string with its password masked, or host:port/database). */
  readonly target: string;
  /** The SQLSTATE the server answered with (`28P01` bad password, `28000` unknown role, `3D000`, …), else null. */
  readonly sqlState: string | null;
  /** The Node.js code of a socket, DNS or TLS failure (`ECONNREFUSED`, `ENOTFOUND`, `CERT_HAS_EXPIRED`, …), else null. */
  readonly socketCode: string | null;
  /** What to check or change to fix it (also the end of the message). */
  readonly hint: string;

  /**
   * @param detail what the driver reported, without secrets (e.g. `connect ECONNREFUSED 127.0.0.1:1`)
   * @param codes the SQLSTATE or socket code of the failure, when it had one
   */
  constructor(
    reason: ConnectionFailureReason,
    target: string,
    detail: string,
    cause: unknown,
    codes: { sqlState?: string | null; socketCode?: string | null } = {},
  ) {
    super(
      'TASKQ_CONNECTION_FAILED',
      `could not connect to Postgres at ${target}: ${detail}. ${HINTS[reason]}`,
      { cause },
    );
    this.reason = reason;
    this.target = target;
    this.sqlState = codes.sqlState ?? null;
    this.socketCode = codes.socketCode ?? null;
    this.hint = HINTS[reason];
  }
}
