import fastifyCookie from '@fastify/cookie';
import fastifyCsrf from '@fastify/csrf-protection';
import fastifyHelmet from '@fastify/helmet';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';

import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { JobNotFoundError } from '../errors/job-errors.js';
import type { TaskQError } from '../errors/taskq-error.js';
import { ADMIN_CSS, ADMIN_JS } from './admin-assets.js';
import { authenticate, isToken, SESSION_COOKIE, sessionValue } from './admin-auth.js';
import { resolveAdminPluginOptions, type AdminOptions, type ResolvedAdminOptions } from './admin-options.js';
import { errorPage, makeRouteContext, rememberUser, sendPage } from './admin-route-context.js';
import { html } from './html.js';
import { registerActorsRoutes } from './actors-routes.js';
import { registerBatchRoutes } from './batch-routes.js';
import { registerJobRoutes } from './job-routes.js';
import { registerQueuesRoutes } from './queues-routes.js';
import { csrfField, layout, type PageContext } from './layout.js';
import { overviewPage } from './overview-page.js';
import { registerSsoRoutes, ssoLoginPath } from './sso-routes.js';
import { registerScheduleRoutes } from './schedule-routes.js';
import { registerRateLimitRoutes } from './rate-limits-routes.js';

/** The overview's "finished recently" window. */
const RECENT_WINDOW_MS = 60_000;
/** At most this many finished jobs are counted for it (a bound on the page's cost on a busy fleet). */
const RECENT_MAX_COUNTED = 10_000;

/**
 * The admin UI as a Fastify plugin. Register it under a prefix in your own app:
 *
 * ```ts
 * await app.register(adminPlugin, { prefix: '/admin', tq, auth: async (req) => ({ user: 'ann' }) });
 * ```
 *
 * It refuses to register without authentication outside a dev environment (see
 * {@link AdminOptions}), sets its own security headers (CSP with `frame-ancestors`,
 * `X-Frame-Options`), requires a CSRF token on every POST, and logs each action as `admin-action`
 * with the user who did it (never a payload). Its hooks and parsers stay inside its prefix.
 * @throws AdminAuthRequiredError, InvalidArgumentError at registration
 */
export const adminPlugin: FastifyPluginAsync<AdminOptions> = async (app, options) => {
  const o = resolveAdminPluginOptions(options);
  const base = app.prefix.replace(/\/+$/, '');
  await registerSecurity(app, o, base);
  const rc = makeRouteContext(o, base);

  app.addHook('onRequest', async (request, reply) => {
    const path = request.url.slice(base.length).split('?')[0] ?? '';
    // Signing in cannot require being signed in: the token form and the SSO routes are open.
    if (path.startsWith('/assets/') || path === '/login' || path.startsWith('/auth/')) return;
    const outcome = await authenticate(request, o);
    if (outcome.kind === 'refused') {
      reply.header('www-authenticate', 'Bearer realm="taskq-admin"');
      const wantsPage = (request.headers.accept ?? '').includes('text/html');
      const sso = ssoLoginPath(rc, request.url);
      if (sso !== null && request.method === 'GET' && wantsPage) return reply.redirect(sso, 303);
      if (o.token !== null && request.method === 'GET' && wantsPage)
        return reply.redirect(`${base}/login`, 303);
      return sendPage(reply, 401, errorPage(base, 'Sign in to use the TaskQ admin UI.'));
    }
    rememberUser(request, outcome.kind === 'user' ? outcome.user : null);
  });

  app.setErrorHandler((err: Error & { statusCode?: number }, request, reply) => {
    if (err instanceof JobNotFoundError) return sendPage(reply, 404, errorPage(base, err.message));
    if (err instanceof InvalidArgumentError) return sendPage(reply, 400, errorPage(base, err.message));
    const status = err.statusCode ?? 500;
    if (status >= 500) {
      // The message may quote a database error; the log gets its class and code only.
      o.logger.error(
        { err: { name: err.name, code: (err as TaskQError).code }, url: request.routeOptions.url },
        'admin-ui-error',
      );
      return sendPage(reply, status, errorPage(base, 'The admin UI failed to answer; see the server log.'));
    }
    return sendPage(reply, status, errorPage(base, err.message));
  });

  const ctx = rc.page;

  app.get('/assets/admin.css', async (_req, reply) => reply.type('text/css; charset=utf-8').send(ADMIN_CSS));
  app.get('/assets/admin.js', async (_req, reply) =>
    reply.type('text/javascript; charset=utf-8').send(ADMIN_JS),
  );

  app.get('/login', async (request, reply) => {
    if (o.token === null) return reply.redirect(`${base}/`, 303);
    const c = await ctx(request, reply);
    return sendPage(reply, 200, loginPage(c, null));
  });
  app.post('/login', { preHandler: app.csrfProtection }, async (request, reply) => {
    if (o.token === null) return reply.redirect(`${base}/`, 303);
    const body = (request.body ?? {}) as Record<string, unknown>;
    if (!isToken(body.token, o.token)) {
      o.logger.warn({ ip: request.ip }, 'admin-login-refused');
      return sendPage(reply, 401, loginPage(await ctx(request, reply), 'That token is not valid.'));
    }
    reply.setCookie(SESSION_COOKIE, sessionValue(o.token), cookieOptions(o, base));
    o.logger.info({ user: 'token', ip: request.ip }, 'admin-login');
    return reply.redirect(`${base}/`, 303);
  });

  app.get('/', async (request, reply) => {
    const [fleet, activity, leader] = await Promise.all([
      o.tq.backend.observeFleet({ aliveWithinMs: o.workerLivenessMs, keyedReservationBases: [] }),
      o.tq.backend.observeActivity({
        aliveWithinMs: o.workerLivenessMs,
        finishedWithinMs: RECENT_WINDOW_MS,
        maxCounted: RECENT_MAX_COUNTED,
      }),
      o.tq.backend.getLeaderLease(),
    ]);
    return sendPage(
      reply,
      200,
      overviewPage(await ctx(request, reply), {
        fleet,
        activity,
        leader,
        livenessSeconds: o.workerLivenessMs / 1000,
        recentSeconds: RECENT_WINDOW_MS / 1000,
        maxCounted: RECENT_MAX_COUNTED,
      }),
    );
  });

  registerJobRoutes(app, rc);
  await registerSsoRoutes(app, rc);
  registerScheduleRoutes(app, rc);
  registerActorsRoutes(app, rc);
  registerQueuesRoutes(app, rc);
  registerRateLimitRoutes(app, rc);
  registerBatchRoutes(app, rc);
};

function cookieOptions(o: ResolvedAdminOptions, base: string) {
  return {
    path: base === '' ? '/' : base,
    httpOnly: true,
    secure: o.secureCookies,
    sameSite: 'strict' as const,
  };
}

/** Cookies, forms, security headers and CSRF, inside the plugin's scope only. */
async function registerSecurity(app: FastifyInstance, o: ResolvedAdminOptions, base: string): Promise<void> {
  if (!app.hasReplyDecorator('setCookie')) await app.register(fastifyCookie);
  if (!app.hasContentTypeParser('application/x-www-form-urlencoded'))
    app.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string', bodyLimit: 16_384 },
      (_req, body, done) => done(null, Object.fromEntries(new URLSearchParams(body as string))),
    );
  const ancestors = o.frameAncestors === 'none' ? "'none'" : "'self'";
  await app.register(fastifyHelmet, {
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", 'data:'],
        connectSrc: ["'self'"],
        formAction: ["'self'"],
        baseUri: ["'none'"],
        objectSrc: ["'none'"],
        frameAncestors: [ancestors],
      },
    },
    frameguard: { action: o.frameAncestors === 'none' ? 'deny' : 'sameorigin' },
    // HSTS only where the deployment is HTTPS (the same setting that marks cookies Secure).
    hsts: o.secureCookies,
  });
  await app.register(fastifyCsrf, { cookieKey: 'taskq_admin_csrf', cookieOpts: cookieOptions(o, base) });
}

function loginPage(ctx: PageContext, problem: string | null): string {
  return layout(
    ctx,
    'Sign in',
    html`<h1>Sign in</h1>
      ${problem === null ? '' : html`<div class="banner" role="alert">${problem}</div>`}
      <form method="post" action="${ctx.base}/login">
        ${csrfField(ctx)}
        <label
          >Admin token <input type="password" name="token" autocomplete="current-password" required
        /></label>
        <button type="submit">Sign in</button>
      </form>`,
  );
}
