import fastifyCookie from '@fastify/cookie';
import fastifyCsrf from '@fastify/csrf-protection';
import fastifyHelmet from '@fastify/helmet';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';

import { isUuid } from '../core/ids.js';
import { checkStorableText } from '../core/text-checks.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { JobNotFoundError } from '../errors/job-errors.js';
import type { TaskQError } from '../errors/taskq-error.js';
import type { JobFilter } from '../backend/job-filter.js';
import type { JobSortField } from '../backend/cursor.js';
import type { JobStatus } from '../backend/types.js';
import { ADMIN_CSS, ADMIN_JS } from './admin-assets.js';
import { authenticate, isToken, SESSION_COOKIE, sessionValue } from './admin-auth.js';
import {
  resolveAdminOptions,
  type AdminOptions,
  type AdminUser,
  type ResolvedAdminOptions,
} from './admin-options.js';
import { html } from './html.js';
import { jobPage } from './job-page.js';
import { jobsPage, type JobsQuery } from './jobs-page.js';
import { jobState, jobStateStream, StreamSlots } from './job-state-stream.js';
import { csrfField, layout, type PageContext } from './layout.js';
import { overviewPage } from './overview-page.js';

/** Rows per page of the jobs list. */
const JOBS_PAGE_SIZE = 50;

/** Who each request is, kept beside the request rather than decorated onto the host's type. */
const users = new WeakMap<FastifyRequest, Required<AdminUser> | null>();

function one(value: unknown): string | undefined {
  if (Array.isArray(value)) return one(value[0]);
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/** A page of its own status code: errors are pages too, escaped like everything else. */
function sendPage(reply: FastifyReply, status: number, page: string): FastifyReply {
  return reply.code(status).type('text/html; charset=utf-8').send(page);
}

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
  const o = resolveAdminOptions(options);
  const base = app.prefix.replace(/\/+$/, '');
  await registerSecurity(app, o, base);

  app.addHook('onRequest', async (request, reply) => {
    const path = request.url.slice(base.length).split('?')[0] ?? '';
    if (path.startsWith('/assets/') || path === '/login') return;
    const outcome = await authenticate(request, o);
    if (outcome.kind === 'refused') {
      reply.header('www-authenticate', 'Bearer realm="taskq-admin"');
      const wantsPage = (request.headers.accept ?? '').includes('text/html');
      if (o.token !== null && request.method === 'GET' && wantsPage)
        return reply.redirect(`${base}/login`, 303);
      return sendPage(reply, 401, errorPage(base, 'Sign in to use the TaskQ admin UI.'));
    }
    users.set(request, outcome.kind === 'user' ? outcome.user : null);
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

  const ctx = async (request: FastifyRequest, reply: FastifyReply): Promise<PageContext> => ({
    base,
    user: users.get(request)?.user ?? null,
    csrfToken: await reply.generateCsrf(),
  });

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
    const [fleet, leader] = await Promise.all([
      o.tq.backend.observeFleet({ aliveWithinMs: o.workerLivenessMs, keyedReservationBases: [] }),
      o.tq.backend.getLeaderLease(),
    ]);
    return sendPage(
      reply,
      200,
      overviewPage(await ctx(request, reply), fleet, leader, o.workerLivenessMs / 1000),
    );
  });

  app.get('/jobs', async (request, reply) => {
    const q = request.query as Record<string, unknown>;
    const query: JobsQuery = {
      status: one(q.status),
      queue: one(q.queue),
      actor: one(q.actor),
      tag: one(q.tag),
      order: one(q.order),
      cursor: one(q.cursor),
    };
    const filter: JobFilter = { limit: JOBS_PAGE_SIZE };
    if (query.status) filter.status = query.status as JobStatus;
    if (query.queue) filter.queue = query.queue;
    if (query.actor) filter.actor = query.actor;
    if (query.tag) filter.tags = [query.tag];
    if (query.order) filter.orderBy = query.order as JobSortField;
    if (query.cursor) filter.cursor = query.cursor;
    const c = await ctx(request, reply);
    try {
      // list() validates every field (status, order, cursor) before it reads anything.
      const page = await o.tq.list(filter);
      return sendPage(reply, 200, jobsPage(c, query, page, null));
    } catch (err) {
      if (err instanceof InvalidArgumentError)
        return sendPage(reply, 400, jobsPage(c, query, null, err.message));
      throw err;
    }
  });

  app.get('/lookup', async (request, reply) => {
    const q = request.query as Record<string, unknown>;
    const id = one(q.id);
    const key = one(q.key);
    const refuse = async (status: number, problem: string) =>
      sendPage(reply, status, jobsPage(await ctx(request, reply), {}, null, problem));
    if (id !== undefined) {
      if (!isUuid(id))
        return refuse(
          400,
          `${JSON.stringify(id)} is not a job id: paste a job's UUID (8-4-4-4-12 hexadecimal digits)`,
        );
      return reply.redirect(`${base}/jobs/${id.toLowerCase()}`, 303);
    }
    if (key === undefined) return refuse(400, 'Give a job id or an idempotency key to look up.');
    // Keys are stored as given: the raw values (not trimmed) are looked up.
    const rawKey = typeof q.key === 'string' ? q.key : key;
    const scope = typeof q.scope === 'string' ? q.scope : '';
    checkStorableText(rawKey, 'key');
    checkStorableText(scope, 'scope');
    const job = await o.tq.backend.getByIdempotencyKey(rawKey, scope);
    if (job === null)
      return refuse(
        404,
        `No job holds the idempotency key ${JSON.stringify(rawKey)} in ${scope === '' ? 'the default scope' : `scope ${JSON.stringify(scope)}`} (a pruned job is no longer found).`,
      );
    return reply.redirect(`${base}/jobs/${job.id}`, 303);
  });

  app.get<{ Params: { id: string }; Querystring: { done?: string } }>('/jobs/:id', async (request, reply) => {
    const id = jobIdParam(request.params.id);
    const job = await o.tq.getRow(id);
    if (job === null) throw new JobNotFoundError(id);
    const waiting = job.status === 'pending' || job.status === 'scheduled';
    const [attempts, events, explanation] = await Promise.all([
      o.tq.backend.getAttempts(id),
      o.tq.backend.getEvents(id),
      waiting ? o.tq.explain(id, { workerAliveWithin: o.workerLivenessMs }) : Promise.resolve(null),
    ]);
    const user = users.get(request) ?? null;
    const notice = NOTICES[one(request.query.done) ?? ''] ?? null;
    return sendPage(
      reply,
      200,
      jobPage(await ctx(request, reply), {
        job,
        attempts,
        events,
        readPayloads: user === null || user.readPayloads,
        actionsEnabled: o.actionsEnabled && (user === null || user.actions),
        maxShownChars: o.maxShownChars,
        maxTracebackChars: o.maxTracebackChars,
        pollIntervalMs: o.pollIntervalMs,
        notice,
        explanation,
      }),
    );
  });

  app.get<{ Params: { id: string } }>('/jobs/:id/state', async (request, reply) => {
    const id = jobIdParam(request.params.id);
    const job = await o.tq.getRow(id);
    if (job === null) return reply.code(404).send({ error: `job ${id} does not exist` });
    return reply.header('cache-control', 'no-store').send(jobState(job));
  });

  const slots = new StreamSlots(o.maxSseConnections);
  app.get<{ Params: { id: string } }>('/jobs/:id/stream', async (request, reply) => {
    const id = jobIdParam(request.params.id);
    if (!slots.tryAcquire()) {
      // The page's script falls back to polling /state when the stream is refused.
      return reply
        .code(503)
        .header('retry-after', String(Math.ceil(o.pollIntervalMs / 1000)))
        .send({
          error: `too many live streams (maxSseConnections ${o.maxSseConnections}); poll /state instead`,
        });
    }
    const abort = new AbortController();
    // The response closes when the client goes away; Fastify then destroys the stream too.
    reply.raw.once('close', () => abort.abort());
    const stream = jobStateStream(o.tq, id, o.pollIntervalMs, abort.signal, () => slots.release());
    stream.once('close', () => abort.abort());
    return reply
      .header('content-type', 'text/event-stream; charset=utf-8')
      .header('cache-control', 'no-store')
      .header('x-accel-buffering', 'no')
      .send(stream);
  });

  app.post<{ Params: { id: string } }>(
    '/jobs/:id/retry',
    { preHandler: app.csrfProtection },
    async (request, reply) => {
      const id = jobIdParam(request.params.id);
      const user = mayAct(request, reply, o, base);
      if (user === undefined) return reply;
      const retried = await o.tq.retryJob(id);
      o.logger.info({ user, action: 'retry', jobId: id, changed: retried }, 'admin-action');
      return reply.redirect(`${base}/jobs/${id}?done=${retried ? 'retried' : 'not-retried'}`, 303);
    },
  );

  app.post<{ Params: { id: string } }>(
    '/jobs/:id/cancel',
    { preHandler: app.csrfProtection },
    async (request, reply) => {
      const id = jobIdParam(request.params.id);
      const user = mayAct(request, reply, o, base);
      if (user === undefined) return reply;
      const result = await o.tq.cancel(id, `cancelled from the admin UI by ${user}`);
      o.logger.info(
        {
          user,
          action: 'cancel',
          jobId: id,
          changed: result.cancellationInitiated,
          status: result.newStatus,
        },
        'admin-action',
      );
      return reply.redirect(
        `${base}/jobs/${id}?done=${result.cancellationInitiated ? 'cancelled' : 'not-cancelled'}`,
        303,
      );
    },
  );
};

/** Outcomes of actions, shown once on the job page after the redirect (fixed texts, not echoed input). */
const NOTICES: Readonly<Record<string, string>> = {
  retried: 'Retried: the job is pending again with a fresh attempt budget.',
  'not-retried': 'Not retried: only a failed, crashed, cancelled or abandoned job can be retried.',
  cancelled: 'Cancel requested.',
  'not-cancelled': 'Nothing to cancel: the job had already finished or a cancel was already requested.',
};

function jobIdParam(id: string): string {
  if (!isUuid(id)) throw new InvalidArgumentError('jobId', id, 'must be a job id (a UUID)');
  return id.toLowerCase();
}

/** The acting user's name, or undefined after answering 403 (actions off, or the user may not act). */
function mayAct(
  request: FastifyRequest,
  reply: FastifyReply,
  o: ResolvedAdminOptions,
  base: string,
): string | undefined {
  const user = users.get(request) ?? null;
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
    void sendPage(reply, 403, errorPage(base, `User ${user.user} may not retry or cancel jobs.`));
    return undefined;
  }
  return user?.user ?? 'anonymous';
}

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

function errorPage(base: string, message: string): string {
  return layout(
    { base, user: null, csrfToken: '' },
    'Error',
    html`<h1>Error</h1>
      <p>${message}</p>`,
  );
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
