import type { FastifyReply, FastifyRequest } from 'fastify';

import type { AdminUser, ResolvedAdminOptions } from './admin-options.js';
import { html } from './html.js';
import { layout, type PageContext } from './layout.js';

/**
 * What every route module of the UI shares: the resolved options, the mount prefix, who the
 * request is, and the page helpers. `adminPlugin` builds one and hands it to each
 * `register…Routes(app, rc)`, so a page is added by adding a module, not by growing the plugin.
 */
export interface AdminRouteContext {
  /** The checked options. */
  o: ResolvedAdminOptions;
  /** The mount prefix without a trailing slash ('' at the root). */
  base: string;
  /** The authenticated user of `request`, or null without authentication (dev). */
  userOf(request: FastifyRequest): Required<AdminUser> | null;
  /** The page context (base, user, a fresh CSRF token) for rendering a page. */
  page(request: FastifyRequest, reply: FastifyReply): Promise<PageContext>;
  /**
   * The acting user's name for a state-changing action, or undefined after answering 403 (actions
   * disabled, or this user may not act). `what` completes "User x may not …".
   */
  mayAct(request: FastifyRequest, reply: FastifyReply, what?: string): string | undefined;
  /** Logs one action as `admin-action` with who did it. Never pass a payload value in `fields`. */
  logAction(user: string, action: string, fields: Record<string, unknown>): void;
}

/** A page of its own status code: errors are pages too, escaped like everything else. */
export function sendPage(reply: FastifyReply, status: number, page: string): FastifyReply {
  return reply.code(status).type('text/html; charset=utf-8').send(page);
}

/** A bare error page (no user, no forms). */
export function errorPage(base: string, message: string): string {
  return layout(
    { base, user: null, csrfToken: '' },
    'Error',
    html`<h1>Error</h1>
      <p>${message}</p>`,
  );
}

/** The first non-blank string of a query value (repeated keys keep the first). */
export function one(value: unknown): string | undefined {
  if (Array.isArray(value)) return one(value[0]);
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/** Who each request is, kept beside the request rather than decorated onto the host's type. */
const users = new WeakMap<FastifyRequest, Required<AdminUser> | null>();

/** Records who `request` is (the plugin's auth hook calls this once per request). */
export function rememberUser(request: FastifyRequest, user: Required<AdminUser> | null): void {
  users.set(request, user);
}

/** Builds the context the route modules share. */
export function makeRouteContext(o: ResolvedAdminOptions, base: string): AdminRouteContext {
  const userOf = (request: FastifyRequest) => users.get(request) ?? null;
  return {
    o,
    base,
    userOf,
    page: async (request, reply) => ({
      base,
      user: userOf(request)?.user ?? null,
      csrfToken: await reply.generateCsrf(),
      signOut: o.sso !== null && userOf(request) !== null,
    }),
    mayAct(request, reply, what = 'change anything here') {
      const user = userOf(request);
      if (!o.actionsEnabled) {
        void sendPage(
          reply,
          403,
          errorPage(
            base,
            'Actions are disabled: set adminActionsEnabled / TASKQ_ADMIN_ACTIONS_ENABLED=true to allow them.',
          ),
        );
        return undefined;
      }
      if (user !== null && !user.actions) {
        void sendPage(reply, 403, errorPage(base, `User ${user.user} may not ${what}.`));
        return undefined;
      }
      return user?.user ?? 'anonymous';
    },
    logAction(user, action, fields) {
      o.logger.info({ user, action, ...fields }, 'admin-action');
    },
  };
}
