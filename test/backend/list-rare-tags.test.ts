/**
 * A tag-filtered listing on Postgres takes one of two shapes, chosen by how many jobs carry the tags
 * (list-sql.ts): the ordered walks over finished and live jobs, merged, or one statement over the tag
 * index. The contract suite only ever reaches the second (its tags are rare); here both shapes read
 * the same table and must return the same rows in the same order, on every page.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { normalizeJobFilter, type JobFilter } from '../../src/backend/job-filter.js';
import { cursorForRow } from '../../src/backend/postgres/filter-sql.js';
import { JOB_COLUMNS } from '../../src/backend/postgres/job-columns.js';
import { listStages, rareTagsProbe, RARE_TAG_ROWS } from '../../src/backend/postgres/list-sql.js';
import { PostgresBackend } from '../../src/backend/postgres/postgres-backend.js';
import { TaskQ } from '../../src/client/taskq.js';
import { plain } from '../helpers/actors.js';
import { migratedSchema, type TestSchema } from '../helpers/db.js';

let db: TestSchema;
let tq: TaskQ;

beforeAll(async () => {
  db = await migratedSchema('list_tags');
  tq = new TaskQ(new PostgresBackend(db.driver, { schema: db.schema }));
  const ids: string[] = [];
  for (let n = 0; n < 30; n++) {
    const tags = n % 3 === 0 ? ['t', 'u'] : n % 3 === 1 ? ['t'] : [];
    const delay = n % 5 === 4 ? { delay: `${n}m` } : {};
    ids.push((await tq.enqueue(plain, { n }, { priority: n % 2, tags, ...delay })).jobId);
  }
  for (const id of ids.filter((_, n) => n % 4 === 1)) await tq.cancel(id);
});
afterAll(async () => {
  await db.drop();
});

/** Every id of the listing, page by page (pages of 4), read as listJobs reads them with `rareTags`. */
async function readAll(filter: JobFilter, rareTags: boolean): Promise<string[]> {
  type Row = { id: string; priority: number; _cursor_us: string | null };
  const seen: string[] = [];
  let f = normalizeJobFilter({ ...filter, limit: 4 });
  for (;;) {
    const rows: Row[] = [];
    for (const stage of listStages(f, `"${db.schema}"`, JOB_COLUMNS, { rareTags })) {
      const q = stage(5 - rows.length);
      rows.push(...(await db.pool.query<Row>(q.text, q.values)).rows);
      if (rows.length > 4) break;
    }
    seen.push(...rows.slice(0, 4).map((r) => r.id));
    const last = rows[3];
    if (rows.length <= 4 || last === undefined) return seen;
    const cursor = cursorForRow(f, {
      id: last.id,
      priority: Number(last.priority),
      _cursor_us: last._cursor_us,
    });
    f = normalizeJobFilter({ ...filter, limit: 4, cursor });
  }
}

describe('tag-filtered listings: the ordered walks and the tag index agree', () => {
  it('probes how many jobs carry the tags, up to RARE_TAG_ROWS', async () => {
    const q = rareTagsProbe(normalizeJobFilter({ tags: ['t'] }), `"${db.schema}"`);
    const { rows } = await db.pool.query<{ n: number }>(q.text, q.values);
    expect(rows[0]?.n).toBe(20);
    expect(RARE_TAG_ROWS).toBeGreaterThan(20);
  });

  it.each(['scheduled_at_asc', 'created_at_desc', 'finished_at_desc'] as const)(
    'in %s order, with and without a status',
    async (orderBy) => {
      for (const filter of [
        { tags: ['t'], orderBy },
        { tags: ['t', 'u'], orderBy },
        { tags: ['t'], status: ['pending', 'cancelled'] as const, orderBy },
        { tags: ['t'], status: 'scheduled' as const, orderBy },
      ] as JobFilter[]) {
        const walked = await readAll(filter, false);
        const byTagIndex = await readAll(filter, true);
        expect(walked.length).toBeGreaterThan(0);
        expect(walked).toEqual(byTagIndex);
        // And both are what the API returns in one page.
        expect(walked).toEqual((await tq.list({ ...filter, limit: 1000 })).jobs.map((j) => j.id));
      }
    },
  );
});
