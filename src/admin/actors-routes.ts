import type { FastifyInstance } from 'fastify';

import { checkActorName } from '../core/text-checks.js';
import { actorsModel } from './actor-view.js';
import { errorPage, one, sendPage, type AdminRouteContext } from './admin-route-context.js';
import { actorsPage } from './actors-page.js';
import { formInteger } from './form-values.js';

/** Outcomes of actions, shown once after the redirect (fixed texts, never echoed input). */
const NOTICES: Readonly<Record<string, string>> = {
  capacity:
    "Capacity changed. Workers and clients pick it up within seconds; a blank value falls back to the code's literal.",
};

/** The actors page and, with actions enabled, the operator's `maxConcurrent` of each actor. */
export function registerActorsRoutes(app: FastifyInstance, rc: AdminRouteContext): void {
  const { base, o } = rc;
  app.get<{ Querystring: { done?: string } }>('/actors', async (request, reply) => {
    const [rows, observations] = await Promise.all([
      o.tq.actors.list(),
      o.tq.backend.observeActors({ aliveWithinMs: o.workerLivenessMs }),
    ]);
    const user = rc.userOf(request);
    return sendPage(
      reply,
      200,
      actorsPage(await rc.page(request, reply), {
        model: actorsModel(rows, observations, o.actors),
        actionsEnabled: o.actionsEnabled && (user === null || user.actions),
        notice: NOTICES[one(request.query.done) ?? ''] ?? null,
        maxMetadataChars: o.maxTracebackChars,
      }),
    );
  });

  app.post<{ Params: { actor: string } }>(
    '/actors/:actor/capacity',
    { preHandler: app.csrfProtection },
    async (request, reply) => {
      const user = rc.mayAct(request, reply, 'change actors');
      if (user === undefined) return reply;
      // Every input is checked before anything is written.
      const actor = checkActorName(request.params.actor, 'actor');
      const body = (request.body ?? {}) as Record<string, unknown>;
      const maxConcurrent = formInteger(
        body.maxConcurrent,
        'maxConcurrent',
        0,
        "to fall back to the code's literal",
      );
      const row = await o.tq.actors.setCapacity(actor, { maxConcurrent });
      if (row === null)
        return sendPage(
          reply,
          404,
          errorPage(base, `Actor ${actor} has no stored configuration: start a worker that runs it first.`),
        );
      rc.logAction(user, 'actor-capacity', { actor, maxConcurrent });
      return reply.redirect(`${base}/actors?done=capacity`, 303);
    },
  );
}
