import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import type { ScheduleHandle } from '../client/schedules.js';
import { isUuid } from '../core/ids.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { errorPage, one, sendPage, type AdminRouteContext } from './admin-route-context.js';
import { schedulePage, schedulesPage, type SchedulesQuery } from './schedules-page.js';

/** Coming slots the schedule page lists. */
const NEXT_FIRES_SHOWN = 10;
/** Recent fires the schedule page lists. */
const FIRES_SHOWN = 20;

/** Outcomes of actions, shown once on the schedule page after the redirect (fixed texts). */
const NOTICES: Readonly<Record<string, string>> = {
  'ran-now': 'Due now: the maintenance leader fires it at its next tick (about a second).',
  'ran-now-disabled': 'Made due now, but it is disabled: it fires once it is enabled.',
  enabled: 'Enabled (its failure count and last error were cleared).',
  disabled: 'Disabled: its slots do not fire until it is enabled again.',
  skipped: 'Skipped the next slot: no job was enqueued for it.',
  'not-skipped':
    'Nothing skipped: the next slot had already changed (fired, skipped or rescheduled) since the page was shown.',
};

type IdRequest = FastifyRequest<{ Params: { id: string } }>;

/**
 * The schedules list, one schedule's page (definition, next slots, recent fires) and its actions:
 * run now, enable, disable, skip the next slot. Actions exist only when enabled, need the CSRF
 * token and are logged with who did them.
 */
export function registerScheduleRoutes(app: FastifyInstance, rc: AdminRouteContext): void {
  const { base } = rc;

  app.get('/schedules', async (request, reply) => {
    const q = request.query as Record<string, unknown>;
    const query: SchedulesQuery = { actor: one(q.actor), enabled: one(q.enabled) };
    const c = await rc.page(request, reply);
    const filter: { actor?: string; enabled?: boolean } = {};
    if (query.actor) filter.actor = query.actor;
    if (query.enabled === 'yes' || query.enabled === 'no') filter.enabled = query.enabled === 'yes';
    else if (query.enabled !== undefined)
      return sendPage(
        reply,
        400,
        schedulesPage(c, query, null, `State ${JSON.stringify(query.enabled)} is not one of: yes, no.`),
      );
    try {
      return sendPage(reply, 200, schedulesPage(c, query, await rc.o.tq.listSchedules(filter), null));
    } catch (err) {
      if (err instanceof InvalidArgumentError)
        return sendPage(reply, 400, schedulesPage(c, query, null, err.message));
      throw err;
    }
  });

  /** The schedule of the route's id, or undefined after answering 404. */
  async function scheduleOf(request: IdRequest, reply: FastifyReply): Promise<ScheduleHandle | undefined> {
    const id = request.params.id;
    if (!isUuid(id)) throw new InvalidArgumentError('scheduleId', id, 'must be a schedule id (a UUID)');
    const handle = await rc.o.tq.getSchedule(id.toLowerCase());
    if (handle === null) {
      void sendPage(
        reply,
        404,
        errorPage(base, `Schedule ${id.toLowerCase()} does not exist (it may have been deleted).`),
      );
      return undefined;
    }
    return handle;
  }

  app.get<{ Params: { id: string } }>('/schedules/:id', async (request, reply) => {
    const handle = await scheduleOf(request, reply);
    if (handle === undefined) return reply;
    const user = rc.userOf(request);
    const fires = await handle.history(FIRES_SHOWN);
    return sendPage(
      reply,
      200,
      schedulePage(await rc.page(request, reply), {
        schedule: handle.record,
        nextFires: handle.nextFireTimes(NEXT_FIRES_SHOWN),
        fires,
        readPayloads: user === null || user.readPayloads,
        actionsEnabled: rc.o.actionsEnabled && (user === null || user.actions),
        maxShownChars: rc.o.maxShownChars,
        maxTracebackChars: rc.o.maxTracebackChars,
        notice: NOTICES[one((request.query as Record<string, unknown>).done) ?? ''] ?? null,
      }),
    );
  });

  /**
   * One schedule action: checks who may act (403 otherwise), finds the schedule (404), runs `act`,
   * logs it with the user and redirects to the schedule page with the outcome's notice.
   */
  function action(
    path: string,
    name: string,
    act: (
      handle: ScheduleHandle,
      request: IdRequest,
    ) => Promise<{ done: string; fields: Record<string, unknown> }>,
  ): void {
    app.post<{ Params: { id: string } }>(
      `/schedules/:id/${path}`,
      { preHandler: app.csrfProtection },
      async (request, reply) => {
        const user = rc.mayAct(request, reply, 'change schedules');
        if (user === undefined) return reply;
        const handle = await scheduleOf(request, reply);
        if (handle === undefined) return reply;
        const { done, fields } = await act(handle, request);
        rc.logAction(user, name, { scheduleId: handle.id, actor: handle.record.actor, ...fields });
        return reply.redirect(`${base}/schedules/${handle.id}?done=${done}`, 303);
      },
    );
  }

  action('run-now', 'schedule-run-now', async (h) => {
    const r = await h.runNow();
    return { done: r.enabled ? 'ran-now' : 'ran-now-disabled', fields: { enabled: r.enabled } };
  });
  action('enable', 'schedule-enable', async (h) => {
    await h.enable();
    return { done: 'enabled', fields: {} };
  });
  action('disable', 'schedule-disable', async (h) => {
    await h.disable();
    return { done: 'disabled', fields: {} };
  });
  action('skip', 'schedule-skip', async (h, request) => {
    const slot = one((request.body as Record<string, unknown> | undefined)?.slot);
    let expected: Date | undefined;
    if (slot !== undefined) {
      expected = new Date(slot);
      if (Number.isNaN(expected.getTime()))
        throw new InvalidArgumentError(
          'slot',
          slot,
          'must be an ISO 8601 instant (the slot the page showed)',
        );
    }
    const r = await h.skipNext(expected);
    return {
      done: r.skipped === null ? 'not-skipped' : 'skipped',
      fields: {
        skipped: r.skipped?.toISOString() ?? null,
        nextFireAt: r.record.nextFireAt?.toISOString() ?? null,
      },
    };
  });
}
