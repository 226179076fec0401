// COPY FROM STDIN over a node-postgres connection. Kept apart from driver.ts, whose types are
// public, so that the published types never name pg-copy-streams (its types are a dev dependency).
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { from as copyFrom, type CopyStreamQuery as CopyFromStream } from 'pg-copy-streams';

/** A node-postgres client (`pg.Client`, `pg.PoolClient`): its `query` also takes a stream query. */
export interface CopyClient {
  query<T extends CopyFromStream>(stream: T): T;
}

/** `COPY table (columns) FROM STDIN` on a node-postgres client, fed with `data` (text format). */
export async function copyFromClient(
  client: CopyClient,
  table: string,
  columns: readonly string[],
  data: Iterable<string>,
): Promise<void> {
  const stream = client.query(copyFrom(`COPY ${table} (${columns.join(', ')}) FROM STDIN`));
  // `pipeline` pulls the chunks as the socket drains, so the server parses one chunk while the
  // next is made, and reports a server error (a bad value, a duplicate key, a dropped connection)
  // as a rejection, after the server has answered.
  await pipeline(Readable.from(data, { objectMode: false }), stream);
}
