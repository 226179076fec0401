import { z } from 'zod';

import { actor } from '../../src/core/actor.js';

/** Actors shared by the contract suite (declared once: declaration validates). */
export const sendEmail = actor(
  {
    name: 'send_email',
    queue: 'emails',
    payload: z.object({ to: z.string().email() }),
    retry: { maxAttempts: 5 },
  },
  async () => undefined,
);
export const plain = actor(
  { name: 'plain', queue: 'default', payload: z.object({ n: z.number().int() }) },
  async () => undefined,
);
export const limited = actor(
  { name: 'limited', payload: z.object({ n: z.number() }), maxPending: 2 },
  async () => undefined,
);
export const lonely = actor({ name: 'lonely', singleton: true }, async () => undefined);
export const deduped = actor({ name: 'deduped', uniqueFor: '10m', maxPending: 1 }, async () => undefined);
export const budgeted = actor(
  { name: 'budgeted', retry: { timeBudget: '1h', kind: 'indefinite' }, startToClose: '30s' },
  async () => undefined,
);
