import type { FastifyInstance } from 'fastify';

import type { BatchFilter } from '../client/batch-filter.js';
import { isUuid } from '../core/ids.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { errorPage, one, sendPage, type AdminRouteContext } from './admin-route-context.js';
import { batchesPage, batchPage, type BatchesQuery } from './batches-page.js';

/** Rows per page of the batches list. */
const BATCHES_PAGE_SIZE = 50;

/** The `state` filter's values and what `listBatches` gets for them. */
const STATES: Readonly<Record<string, boolean>> = { active: true, finished: false };

/** The batches list (filters and keyset pages of `listBatches`), lookup by id, and the batch page. */
export function registerBatchRoutes(app: FastifyInstance, rc: AdminRouteContext): void {
  const { base } = rc;
  app.get('/batches', async (request, reply) => {
    const q = request.query as Record<string, unknown>;
    const query: BatchesQuery = { queue: one(q.queue), state: one(q.state), cursor: one(q.cursor) };
    const c = await rc.page(request, reply);
    const filter: BatchFilter = { limit: BATCHES_PAGE_SIZE };
    if (query.queue) filter.queue = query.queue;
    if (query.cursor) filter.cursor = query.cursor;
    try {
      if (query.state) {
        const active = STATES[query.state];
        if (active === undefined)
          throw new InvalidArgumentError(
            'state',
            query.state,
            'must be "active" or "finished" (or empty for all)',
          );
        filter.active = active;
      }
      // listBatches validates the cursor before it reads anything.
      const page = await rc.o.tq.listBatches(filter);
      return sendPage(reply, 200, batchesPage(c, query, page, null));
    } catch (err) {
      if (err instanceof InvalidArgumentError)
        return sendPage(reply, 400, batchesPage(c, query, null, err.message));
      throw err;
    }
  });

  app.get('/batches/lookup', async (request, reply) => {
    const id = one((request.query as Record<string, unknown>).id);
    if (id === undefined || !isUuid(id))
      return sendPage(
        reply,
        400,
        batchesPage(
          await rc.page(request, reply),
          {},
          null,
          `${JSON.stringify(id ?? '')} is not a batch id: paste a batch's UUID (8-4-4-4-12 hexadecimal digits)`,
        ),
      );
    return reply.redirect(`${base}/batches/${id.toLowerCase()}`, 303);
  });

  app.get<{ Params: { id: string } }>('/batches/:id', async (request, reply) => {
    const id = request.params.id;
    if (!isUuid(id)) throw new InvalidArgumentError('batchId', id, 'must be a batch id (a UUID)');
    const batch = await rc.o.tq.getBatch(id);
    if (batch === null)
      return sendPage(
        reply,
        404,
        errorPage(
          base,
          `No batch row ${id.toLowerCase()}: only batches enqueued with a failure policy or a finalizer have one. Its children, if any, are listed at /jobs?batch=${id.toLowerCase()}.`,
        ),
      );
    const user = rc.userOf(request);
    return sendPage(
      reply,
      200,
      batchPage(await rc.page(request, reply), batch, {
        readPayloads: user === null || user.readPayloads,
        maxShownChars: rc.o.maxShownChars,
      }),
    );
  });
}
