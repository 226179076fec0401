import { TaskQError } from './taskq-error.js';

/**
 * The admin UI was asked to start without authentication outside a dev environment: it fails
 * closed rather than expose jobs (and their payloads) to anyone who can reach the port.
 */
export class AdminAuthRequiredError extends TaskQError {
  /** The `environment` the UI was started in (`null` when none was given). */
  readonly environment: string | null;

  constructor(environment: string | null) {
    super(
      'TASKQ_ADMIN_AUTH_REQUIRED',
      `the admin UI refuses to start without authentication in environment ${JSON.stringify(environment)}: ` +
        'pass an auth hook (auth: (request) => Promise<{ user } | null>) or a bearer token (token; ' +
        'for `taskq ui serve`, TASKQ_HEALTH_TOKEN), or single sign-on (oidc / saml; ' +
        'TASKQ_SSO_BACKEND=oidc|saml), or set environment to "dev" on a development ' +
        'machine, or requireAuth: false (TASKQ_ADMIN_UI_REQUIRE_AUTH=false) only behind your own ' +
        'authenticating proxy',
    );
    this.environment = environment;
  }
}
