/**
 * Injection typing: a handler's third argument is typed from the actor's `inject`, and a handler
 * whose destructured names or types do not match is a compile error (the type checker covers test
 * files: `npm run typecheck`). Payload inference is unchanged by `inject`.
 */
import { z } from 'zod';
import { describe, expect, expectTypeOf, it } from 'vitest';

import {
  actor,
  threadActor,
  type DependenciesOf,
  type InputOf,
  type PayloadOf,
  type ResultOf,
} from '../../src/core/actor.js';
import { Providers } from '../../src/di/providers.js';
import { token, type TypeOf } from '../../src/di/token.js';

interface DbPool {
  query(sql: string): Promise<number>;
}
interface HttpClient {
  get(url: string): Promise<string>;
}
const Db = token<DbPool>('Db');
const Http = token<HttpClient>('Http');

const Order = z.object({ id: z.string(), rush: z.boolean().default(false) });

describe('inject types', () => {
  it('types the third argument from inject, keeping payload and result inference', () => {
    const charge = actor(
      { name: 'types_charge', payload: Order, inject: { db: Db, http: Http } },
      async (payload, ctx, { db, http }) => {
        expectTypeOf(payload).toEqualTypeOf<{ id: string; rush: boolean }>();
        expectTypeOf(ctx.jobId).toEqualTypeOf<string>();
        expectTypeOf(db).toEqualTypeOf<DbPool>();
        expectTypeOf(http).toEqualTypeOf<HttpClient>();
        return (await db.query(payload.id)) + (await http.get('/')).length;
      },
    );
    expectTypeOf<PayloadOf<typeof charge>>().toEqualTypeOf<{ id: string; rush: boolean }>();
    expectTypeOf<InputOf<typeof charge>>().toEqualTypeOf<{ id: string; rush?: boolean | undefined }>();
    expectTypeOf<ResultOf<typeof charge>>().toEqualTypeOf<number>();
    expectTypeOf<DependenciesOf<typeof charge>>().toEqualTypeOf<{
      readonly db: DbPool;
      readonly http: HttpClient;
    }>();
    expectTypeOf<TypeOf<typeof Db>>().toEqualTypeOf<DbPool>();
    expect(charge.inject).toEqual({ db: Db, http: Http });
  });

  it('rejects a handler whose injected names or types do not match', () => {
    actor(
      { name: 'types_wrong_name', inject: { db: Db } },
      // @ts-expect-error `cache` is not injected
      async (_p, _c, { cache }) => cache,
    );
    // @ts-expect-error db is a DbPool, not an HttpClient (no overload matches)
    actor({ name: 'types_wrong_type', inject: { db: Db } }, async (_p, _c, { db }: { db: HttpClient }) =>
      db.get('/'),
    );
    actor({ name: 'types_annotated_ok', inject: { db: Db } }, async (_p, _c, { db }: { db: DbPool }) =>
      db.query('x'),
    );
    actor(
      { name: 'types_wrong_use', inject: { http: Http } },
      // @ts-expect-error http has no query()
      async (_p, _c, { http }) => http.query('select 1'),
    );
    // @ts-expect-error a handler of an actor without inject gets no third argument
    actor({ name: 'types_no_inject' }, async (_p, _c, deps: { db: DbPool }) => deps);
    expect(true).toBe(true);
  });

  it('types run() and factories from their tokens', async () => {
    const lookup = actor({ name: 'types_run', inject: { db: Db } }, async (_p, _c, { db }) => db.query('q'));
    const db: DbPool = { query: async () => 7 };
    expect(await lookup.run(undefined, {} as never, { db })).toBe(7);
    // @ts-expect-error the deps must be a DbPool
    await lookup.run(undefined, {} as never, { db: 'nope' }).catch(() => undefined);

    new Providers().value(Db, db).factory(Http, { scope: 'job', inject: { db: Db } }, async ({ db }) => {
      expectTypeOf(db).toEqualTypeOf<DbPool>();
      return { get: async () => String(await db.query('x')) };
    });
    // @ts-expect-error the value must be a DbPool
    expect(() => new Providers().value(Db, 'not a pool')).not.toThrow();
    new Providers().factory(
      Http,
      { scope: 'job', inject: { db: Db } },
      // @ts-expect-error the factory must make an HttpClient
      ({ db }) => db,
    );
  });

  it('types a thread actor’s injected values', () => {
    const threaded = threadActor({
      name: 'types_thread',
      module: new URL('../fixtures/thread-handlers.ts', import.meta.url),
      inject: { db: Db },
    });
    expectTypeOf<DependenciesOf<typeof threaded>>().toEqualTypeOf<{ readonly db: DbPool }>();
    expect(threaded.inject).toEqual({ db: Db });
  });
});
