import type { FastifyInstance } from 'fastify';

import { checkQueueMode } from '../backend/operator-config.js';
import { queueViews } from '../cli/queue-view.js';
import { checkQueueName } from '../core/text-checks.js';
import { one, sendPage, type AdminRouteContext } from './admin-route-context.js';
import { formInteger } from './form-values.js';
import { queuesPage } from './queues-page.js';

/** Outcomes of actions, shown once after the redirect (fixed texts, never echoed input). */
const NOTICES: Readonly<Record<string, string>> = {
  mode: 'Dispatch mode changed: workers use it from their next claim.',
  cap: 'Queue cap changed: workers read queue caps when they start, so restart them to apply it.',
};

/** The queues page and, with actions enabled, each queue's dispatch mode and fleet-wide cap. */
export function registerQueuesRoutes(app: FastifyInstance, rc: AdminRouteContext): void {
  const { base, o } = rc;
  app.get<{ Querystring: { done?: string } }>('/queues', async (request, reply) => {
    // The same rows as `taskq queues list`, with the UI's liveness window.
    const [config, fleet] = await Promise.all([
      o.tq.backend.listQueues(),
      o.tq.backend.observeFleet({ aliveWithinMs: o.workerLivenessMs, keyedReservationBases: [] }),
    ]);
    const user = rc.userOf(request);
    return sendPage(
      reply,
      200,
      queuesPage(await rc.page(request, reply), {
        queues: queueViews(config, fleet),
        actionsEnabled: o.actionsEnabled && (user === null || user.actions),
        notice: NOTICES[one(request.query.done) ?? ''] ?? null,
        livenessSeconds: o.workerLivenessMs / 1000,
      }),
    );
  });

  app.post<{ Params: { queue: string } }>(
    '/queues/:queue/mode',
    { preHandler: app.csrfProtection },
    async (request, reply) => {
      const user = rc.mayAct(request, reply, 'change queues');
      if (user === undefined) return reply;
      const body = (request.body ?? {}) as Record<string, unknown>;
      // Checked here, before anything is written (InvalidArgumentError answers 400).
      const { queue, mode } = checkQueueMode(request.params.queue, body.mode);
      await o.tq.backend.setQueueMode(queue, mode);
      rc.logAction(user, 'queue-mode', { queue, mode });
      return reply.redirect(`${base}/queues?done=mode`, 303);
    },
  );

  app.post<{ Params: { queue: string } }>(
    '/queues/:queue/max-concurrent',
    { preHandler: app.csrfProtection },
    async (request, reply) => {
      const user = rc.mayAct(request, reply, 'change queues');
      if (user === undefined) return reply;
      const queue = checkQueueName(request.params.queue, 'queue');
      const body = (request.body ?? {}) as Record<string, unknown>;
      const maxConcurrent = formInteger(body.maxConcurrent, 'maxConcurrent', 1, 'to remove the cap');
      await o.tq.backend.setQueueMaxConcurrent(queue, maxConcurrent);
      rc.logAction(user, 'queue-max-concurrent', { queue, maxConcurrent });
      return reply.redirect(`${base}/queues?done=cap`, 303);
    },
  );
}
