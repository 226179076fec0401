/**
 * The client's size settings change what `enqueue` accepts: `TASKQ_PAYLOAD_MAX_BYTES` and
 * `TASKQ_IDEMPOTENCY_KEY_MAX_BYTES` (also proof, for test/settings/every-setting.test.ts, that a
 * client built from the environment connects with `TASKQ_PG_DSN` and `TASKQ_SCHEMA_NAME`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { actor } from '../../src/core/actor.js';
import { TaskQ } from '../../src/client/taskq.js';
import { InvalidArgumentError, PayloadTooLarge } from '../../src/errors/index.js';
import { migratedSchema, TEST_DSN, type TestSchema } from '../helpers/db.js';

let db: TestSchema;
let small: TaskQ;
let defaults: TaskQ;

beforeAll(async () => {
  db = await migratedSchema('csize');
  const env = { TASKQ_PG_DSN: TEST_DSN, TASKQ_SCHEMA_NAME: db.schema };
  small = await TaskQ.fromEnv({
    ...env,
    TASKQ_PAYLOAD_MAX_BYTES: '1024',
    TASKQ_IDEMPOTENCY_KEY_MAX_BYTES: '8',
  });
  defaults = await TaskQ.fromEnv(env);
});
afterAll(async () => {
  await small.close();
  await defaults.close();
  await db.drop();
});

const echo = actor({ name: 'c_size', queue: 'c_size' }, async (p: { text: string }) => p.text);

describe('client size settings', () => {
  it('TASKQ_PAYLOAD_MAX_BYTES: a 2 KiB payload is refused at 1 KiB, stored under the default', async () => {
    const payload = { text: 'x'.repeat(2048) };
    await expect(small.enqueue(echo, payload)).rejects.toBeInstanceOf(PayloadTooLarge);
    const h = await defaults.enqueue(echo, payload);
    expect((await defaults.getRow(h.jobId))?.status).toBe('pending');
  });

  it('TASKQ_IDEMPOTENCY_KEY_MAX_BYTES: a 9-byte key is refused at 8 bytes, accepted under the default', async () => {
    const err = await small.enqueue(echo, { text: 'a' }, { idempotencyKey: '123456789' }).catch((e) => e);
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as InvalidArgumentError).message).toMatch(/idempotencyKey/);
    await small.enqueue(echo, { text: 'a' }, { idempotencyKey: '12345678' });
    await defaults.enqueue(echo, { text: 'a' }, { idempotencyKey: '123456789' });
  });
});
