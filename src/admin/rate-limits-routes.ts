import type { FastifyInstance } from 'fastify';

import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import type { Logger } from '../obs/logger.js';
import { RateLimitBackendMissing, RateLimitNotFound } from '../ratelimit/errors.js';
import {
  RateLimitAdmin,
  type RateLimitBucketRow,
  type ReservationRow,
} from '../ratelimit/rate-limit-admin.js';
import { errorPage, one, sendPage, type AdminRouteContext } from './admin-route-context.js';
import {
  rateLimitsPage,
  type KeyedLimitGroup,
  type KeyedReservationGroup,
  type LimitView,
  type RateLimitsView,
} from './rate-limits-page.js';

/** Static rate limits peeked and shown per page view; more are counted, not read. */
export const MAX_STATIC_LIMITS_SHOWN = 200;
/** Keyed groups shown per section (the most recently used); more are counted. */
export const MAX_GROUPS_SHOWN = 50;
/** Keys peeked and shown per keyed group (the most recently used); the rest are counted only. */
export const KEYS_SHOWN_PER_GROUP = 10;

/** Outcomes shown once after a reset's redirect (fixed texts, never echoed input). */
const NOTICES: Readonly<Record<string, string>> = {
  reset: 'Reset: the rate limit is full again.',
};

/**
 * The rate-limits page (`GET /rate-limits`): the peek state of every published rate limit and
 * reservation, keyed ones grouped and bounded; and `POST /rate-limits/:name/reset`, served only
 * with `allowRateLimitReset` and actions enabled.
 */
export function registerRateLimitRoutes(app: FastifyInstance, rc: AdminRouteContext): void {
  const { base, o } = rc;
  // Built once: the stores hold no connection of their own here (Redis is the client's, if any).
  const redis = o.tq.redis;
  const admin = RateLimitAdmin.forBackend(o.tq.backend, { redis, logger: o.logger });

  app.get('/rate-limits', async (request, reply) => {
    const user = rc.userOf(request);
    const readPayloads = user === null || user.readPayloads;
    const { rateLimits, reservations } = await admin.list();
    const view: RateLimitsView = {
      ...(await limitsView(admin, rateLimits, redis !== null, readPayloads, o.logger)),
      ...reservationsView(reservations, readPayloads),
      redis: redis !== null,
      readPayloads,
      canReset: o.allowRateLimitReset && o.actionsEnabled && (user === null || user.actions),
      notice: NOTICES[one((request.query as Record<string, unknown>).done) ?? ''] ?? null,
    };
    return sendPage(reply, 200, rateLimitsPage(await rc.page(request, reply), view));
  });

  // `/rate-limits/<name>/reset` as a wildcard: a name may be 512 bytes (past Fastify's 100-character
  // parameter limit) and hold '/', so it is read from the raw path, percent-decoded once.
  app.post('/rate-limits/*', { preHandler: app.csrfProtection }, async (request, reply) => {
    const path = (request.url.split('?')[0] ?? '').slice(base.length);
    const encoded = /^\/rate-limits\/([^/]+)\/reset$/.exec(path)?.[1];
    if (encoded === undefined) return sendPage(reply, 404, errorPage(base, 'No such page.'));
    if (!o.allowRateLimitReset)
      return sendPage(
        reply,
        403,
        errorPage(
          base,
          'Rate-limit resets are disabled: set allowRateLimitReset / TASKQ_ADMIN_UI_ALLOW_RATE_LIMIT_RESET=true (with actions enabled) to allow them.',
        ),
      );
    const user = rc.mayAct(request, reply, 'reset rate limits');
    if (user === undefined) return reply;
    let name: string;
    try {
      name = decodeURIComponent(encoded);
    } catch {
      throw new InvalidArgumentError('name', encoded, 'must be a percent-encoded rate-limit name');
    }
    try {
      const row = await admin.reset(name);
      // Warn, not info: a reset readmits a whole burst at once, so it stands out in the log.
      o.logger.warn(
        { user, action: 'rate-limit-reset', name: row.name, kind: row.kind, backend: row.backend },
        'admin-action',
      );
    } catch (err) {
      if (err instanceof RateLimitNotFound) return sendPage(reply, 404, errorPage(base, err.message));
      // A reservation: RateLimitAdmin says why it is never reset.
      if (err instanceof InvalidArgumentError) return sendPage(reply, 400, errorPage(base, err.message));
      if (err instanceof RateLimitBackendMissing)
        return sendPage(
          reply,
          409,
          errorPage(base, `${err.message} (the admin UI's TaskQ client has no Redis: give it redisUrl)`),
        );
      throw err;
    }
    return reply.redirect(`${base}/rate-limits?done=reset`, 303);
  });
}

/** The text before a keyed name's first ':' (keyed names are `<baseName>:<key>`). */
function prefixOf(name: string): string {
  const i = name.indexOf(':');
  return i < 0 ? name : name.slice(0, i);
}

/**
 * Static limits peeked one by one (bounded), keyed ones grouped. A keyed name is `<base>:<key>`,
 * and both may contain ':', so no row says which part is the base: rows are grouped by the text
 * before the first ':' and the whole configuration, which keeps differently shaped limits apart.
 */
async function limitsView(
  admin: RateLimitAdmin,
  rows: readonly RateLimitBucketRow[],
  haveRedis: boolean,
  readPayloads: boolean,
  logger: Logger,
): Promise<Pick<RateLimitsView, 'limits' | 'limitsNotShown' | 'keyedLimits' | 'keyedLimitGroupsNotShown'>> {
  const statics = rows.filter((r) => !r.keyed);
  const groups = new Map<string, { rows: RateLimitBucketRow[]; first: RateLimitBucketRow }>();
  for (const r of rows) {
    if (!r.keyed) continue;
    const id = [prefixOf(r.name), r.kind, r.backend, r.capacity, r.refillPerSecond, r.windowMs].join(
      '\u0000',
    );
    const g = groups.get(id);
    if (g) g.rows.push(r);
    else groups.set(id, { rows: [r], first: r });
  }
  const peek = async (row: RateLimitBucketRow): Promise<LimitView> => {
    if (row.backend === 'redis' && !haveRedis) return { row, state: null, problem: 'state needs Redis' };
    try {
      return { row, state: await admin.state(row), problem: null };
    } catch (err) {
      if (err instanceof RateLimitBackendMissing) return { row, state: null, problem: 'state needs Redis' };
      // One unreadable limit must not fail the page; the log gets the class, not a message.
      logger.warn(
        { err: { name: (err as Error).name, code: (err as { code?: string }).code }, name: row.name },
        'admin-rate-limit-peek-failed',
      );
      return { row, state: null, problem: 'state could not be read (see the server log)' };
    }
  };
  const byRecency = (a: { lastUsedAt: Date }, b: { lastUsedAt: Date }) =>
    b.lastUsedAt.getTime() - a.lastUsedAt.getTime();
  const sorted = [...groups.values()].map((g) => ({ ...g, rows: [...g.rows].sort(byRecency) }));
  const ordered = sorted.map((g) => ({ ...g, lastUsedAt: g.rows[0]!.lastUsedAt })).sort(byRecency);
  const keyedLimits: KeyedLimitGroup[] = await Promise.all(
    ordered.slice(0, MAX_GROUPS_SHOWN).map(async (g) => ({
      label: `${prefixOf(g.first.name)}:*`,
      shape: g.first,
      keys: g.rows.length,
      lastUsedAt: g.lastUsedAt,
      // Keys come from payloads (the ref's keyFn): only users who may read payloads see them.
      shown: readPayloads ? await Promise.all(g.rows.slice(0, KEYS_SHOWN_PER_GROUP).map(peek)) : [],
    })),
  );
  return {
    limits: await Promise.all(statics.slice(0, MAX_STATIC_LIMITS_SHOWN).map(peek)),
    limitsNotShown: Math.max(0, statics.length - MAX_STATIC_LIMITS_SHOWN),
    keyedLimits,
    keyedLimitGroupsNotShown: Math.max(0, ordered.length - MAX_GROUPS_SHOWN),
  };
}

/** Static reservations (bounded); keyed ones summed per group with their busiest keys. */
function reservationsView(
  rows: readonly ReservationRow[],
  readPayloads: boolean,
): Pick<
  RateLimitsView,
  'reservations' | 'reservationsNotShown' | 'keyedReservations' | 'keyedReservationGroupsNotShown'
> {
  const groups = new Map<string, ReservationRow[]>();
  for (const r of rows) {
    if (!r.keyed) continue;
    const id = prefixOf(r.name);
    const g = groups.get(id);
    if (g) g.push(r);
    else groups.set(id, [r]);
  }
  // Busiest groups first: a full reservation is what an operator comes looking for.
  const all: KeyedReservationGroup[] = [...groups.entries()].map(([prefix, rs]) => ({
    label: `${prefix}:*`,
    keys: rs.length,
    slots: rs.reduce((n, r) => n + r.slots, 0),
    held: rs.reduce((n, r) => n + r.held, 0),
    shown: readPayloads
      ? [...rs].sort((a, b) => b.held - a.held || a.name.localeCompare(b.name)).slice(0, KEYS_SHOWN_PER_GROUP)
      : [],
  }));
  all.sort((a, b) => b.held - a.held || a.label.localeCompare(b.label));
  const statics = rows.filter((r) => !r.keyed);
  return {
    reservations: statics.slice(0, MAX_STATIC_LIMITS_SHOWN),
    reservationsNotShown: Math.max(0, statics.length - MAX_STATIC_LIMITS_SHOWN),
    keyedReservations: all.slice(0, MAX_GROUPS_SHOWN),
    keyedReservationGroupsNotShown: Math.max(0, all.length - MAX_GROUPS_SHOWN),
  };
}
