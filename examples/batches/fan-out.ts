// Fan-out and finalize: a batch of child jobs, and a finalizer that acts once every child has ended.
// Run it with `TASKQ_PG_DSN=postgres://… npx tsx examples/batches/fan-out.ts` (schema
// $TASKQ_SCHEMA_NAME, else taskq_examples; migrated first). Examples run from the repository, so they
// import the package source; in your code, import from 'taskq' and 'taskq/worker' instead.
import { randomUUID } from 'node:crypto';

import { z } from 'zod';

import {
  AbortBatchAfter,
  actor,
  BatchAbortedError,
  batchItem,
  Migrator,
  PgDriver,
  TaskQ,
} from '../../src/index.js';
import { Worker } from '../../src/worker/index.js';

const dsn = process.env.TASKQ_PG_DSN;
if (!dsn) throw new Error('set TASKQ_PG_DSN to a Postgres connection string');
const schema = process.env.TASKQ_SCHEMA_NAME ?? 'taskq_examples';

const driver = new PgDriver({ connection: dsn });
await new Migrator(driver, { schema }).up();
const tq = await TaskQ.open({ driver, schema });

/** A child: resizes one image. A corrupt file fails for good (retrying cannot help). */
const resizeImage = actor(
  {
    name: 'resize_image',
    queue: 'albums',
    payload: z.object({ file: z.string() }),
    retry: { kind: 'nonRetryable' },
  },
  async ({ file }) => {
    if (file.startsWith('corrupt')) throw new Error(`${file} is not an image`);
    return { file, width: 800 };
  },
);

/** The finalizer: enqueued with the batch, not one of its children. It runs at once and waits. */
const publishAlbum = actor(
  {
    name: 'publish_album',
    queue: 'albums',
    payload: z.object({ album: z.string(), batchId: z.string().uuid() }),
    result: z.string(),
  },
  async ({ album, batchId }) => {
    try {
      // While children are pending or running this throws Snooze: the finalizer comes back as
      // soon as the batch ends, without using an attempt, and holds no worker slot meanwhile.
      const done = await tq.waitForBatch(batchId);
      return `${album}: published ${done.succeeded} of ${done.total} images`;
    } catch (err) {
      if (!(err instanceof BatchAbortedError)) throw err;
      return `${album}: not published, the batch was aborted after ${err.threshold} failures in a row`;
    }
  },
);

/** Enqueues one child per file and the finalizer, in one transaction; resolves with its result. */
async function publish(album: string, files: string[]): Promise<unknown> {
  const batchId = randomUUID(); // chosen here so that the finalizer's payload can carry it
  const batch = await tq.enqueueBatch(
    files.map((file) => batchItem(resizeImage, { file })),
    {
      batchId,
      failurePolicy: new AbortBatchAfter(2),
      finalizer: batchItem(publishAlbum, { album, batchId }),
    },
  );
  return batch.finalizerHandle!.wait({ timeout: '60s' });
}

const worker = new Worker({
  actors: [resizeImage, publishAlbum],
  driver,
  // The example prints its own lines; a real worker logs at 'info'.
  settings: { schema, queues: ['albums'], maxConcurrency: 4, logLevel: 'silent' },
});
await worker.start();
try {
  const results = await Promise.all([
    publish('summer', ['beach.jpg', 'dunes.jpg', 'sunset.jpg']),
    publish('attic', ['corrupt-1.jpg', 'corrupt-2.jpg', 'corrupt-3.jpg']),
  ]);
  for (const line of results) console.log(line);
} finally {
  await worker.stop();
  await tq.close();
}
