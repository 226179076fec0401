import type { CursorKey } from '../cursor.js';
import type { NormalizedJobFilter } from '../job-filter.js';
import type { JobStatus } from '../types.js';
import { filterConditions, usToTimestampText } from './filter-sql.js';

/**
 * The keyset-paginated listing (`Backend.listJobs`) as SQL.
 *
 * A table of a million jobs is mostly finished jobs, and no index over every row serves the three
 * orderings: one would take an entry at every enqueue and at every status change (a status change
 * is never a HOT update). So a listing reads two disjoint parts of the table, each through indexes
 * whose cost follows only that part:
 *
 * - the finished jobs (terminal statuses) through partial indexes that hold nothing else and lead
 *   with the status (`jobs_terminal_created_idx`, `jobs_terminal_dispatch_order_idx`, migration
 *   0006), one part per status, each walked in the page's order, so a page reads about a page of
 *   entries of each status it shows, however rare the status; `jobs_finished_at_idx` for
 *   `finished_at_desc`. A job gets its entries when it finishes, never at enqueue or claim;
 * - the live jobs (pending, scheduled, running) through the indexes the worker already keeps for
 *   them (`jobs_waiting_idx`, `jobs_running_idx`, the dispatch indexes), read whole and sorted:
 *   their cost follows the backlog, not the history.
 *
 * For `created_at_desc` and `scheduled_at_asc` the parts interleave: one statement takes the first
 * `limit + 1` ids of each part in order, merges them, keeps the first `limit + 1` and reads those
 * rows. A part's predicate (`status = 'failed'`) implies the partial index's, which the planner
 * proves. For `finished_at_desc` every finished job (`finished_at` set) comes before every
 * job without one, so the parts are read one after the other: the second only once the first runs
 * out (see {@link listStages}).
 */

/** One statement of a listing, with its bound values. */
export interface ListStatement {
  text: string;
  values: unknown[];
}

/** Builds one stage's statement for reading at most `rows` rows. */
export type ListStage = (rows: number) => ListStatement;

const TERMINAL: ReadonlySet<JobStatus> = new Set([
  'succeeded',
  'failed',
  'cancelled',
  'crashed',
  'abandoned',
]);

// Written as an OR so the planner can combine jobs_waiting_idx and jobs_running_idx (a BitmapOr).
const LIVE_SQL = `(j.status IN ('pending', 'scheduled') OR j.status = 'running')`;

const ORDER_SQL = {
  scheduled_at_asc: 'j.priority DESC, j.scheduled_at ASC, j.id ASC',
  created_at_desc: 'j.created_at DESC, j.id DESC',
  finished_at_desc: 'j.finished_at DESC NULLS LAST, j.id DESC',
} as const;

/** The sort columns each ordering's merge reads from its parts. */
const SORT_COLUMNS = {
  scheduled_at_asc: 'j.id, j.priority, j.scheduled_at',
  created_at_desc: 'j.id, j.created_at',
} as const;

const KEY_SQL = {
  scheduled_at_asc: '(extract(epoch FROM j.scheduled_at) * 1000000)::int8::text AS _cursor_us',
  created_at_desc: '(extract(epoch FROM j.created_at) * 1000000)::int8::text AS _cursor_us',
  finished_at_desc: '(extract(epoch FROM j.finished_at) * 1000000)::int8::text AS _cursor_us',
} as const;

function bind(values: unknown[], v: unknown): string {
  values.push(v);
  return `$${values.length}`;
}

/** Rows after the cursor in its ordering (the finished-at seam is handled by the stages). */
function keysetCondition(after: CursorKey, values: unknown[]): string {
  const p = (v: unknown) => bind(values, v);
  switch (after.order) {
    case 'scheduled_at_asc': {
      const pr = p(after.priority);
      return `(j.priority < ${pr} OR (j.priority = ${pr} AND (j.scheduled_at, j.id) > (${p(usToTimestampText(after.scheduledAtUs))}::timestamptz, ${p(after.id)}::uuid)))`;
    }
    case 'created_at_desc':
      return `(j.created_at, j.id) < (${p(usToTimestampText(after.createdAtUs))}::timestamptz, ${p(after.id)}::uuid)`;
    case 'finished_at_desc':
      return after.finishedAtUs === null
        ? `j.id < ${p(after.id)}::uuid`
        : `(j.finished_at, j.id) < (${p(usToTimestampText(after.finishedAtUs))}::timestamptz, ${p(after.id)}::uuid)`;
  }
}

/** Rows after a `finished_at_desc` cursor in one statement that reads both sides of the seam. */
function finishedKeysetAcrossSeam(
  after: Extract<CursorKey, { order: 'finished_at_desc' }>,
  values: unknown[],
): string {
  const p = (v: unknown) => bind(values, v);
  return after.finishedAtUs === null
    ? `(j.finished_at IS NULL AND j.id < ${p(after.id)}::uuid)`
    : `((j.finished_at, j.id) < (${p(usToTimestampText(after.finishedAtUs))}::timestamptz, ${p(after.id)}::uuid) OR j.finished_at IS NULL)`;
}

/** Which parts of the table the filter's statuses reach. */
function parts(f: NormalizedJobFilter): { terminal: boolean; live: boolean } {
  if (f.statuses === null) return { terminal: true, live: true };
  return {
    terminal: f.statuses.some((s) => TERMINAL.has(s)),
    live: f.statuses.some((s) => !TERMINAL.has(s)),
  };
}

const where = (conds: readonly string[]) => (conds.length > 0 ? `WHERE ${conds.join(' AND ')}` : '');

/**
 * Fewer jobs than this carrying a tag filter's tags make it a rare tag: its jobs are read whole
 * through jobs_tags_idx and sorted (at most this many rows) rather than picked out of the ordered
 * walks, which would pass over most of the history to find a page of them.
 */
export const RARE_TAG_ROWS = 2000;

/**
 * Counts the jobs carrying the filter's tags, up to {@link RARE_TAG_ROWS}, through jobs_tags_idx:
 * what {@link listStages} needs to know for `rareTags`. The planner cannot tell: a tag outside its
 * most-common list gets a guessed share, often wrong by tens of times either way.
 */
export function rareTagsProbe(f: NormalizedJobFilter, quotedSchema: string): ListStatement {
  return {
    text: `SELECT count(*)::int AS n FROM (SELECT 1 FROM ${quotedSchema}.jobs j WHERE j.tags <> '{}'::text[] AND j.tags @> $1::text[] LIMIT ${RARE_TAG_ROWS}) x`,
    values: [f.tags],
  };
}

/**
 * The statements of one page, to run in order until `limit + 1` rows have been read (one past the
 * page tells whether another exists); each stage is given how many rows are still wanted.
 * `rareTags`: the filter's tags are carried by fewer than {@link RARE_TAG_ROWS} jobs
 * ({@link rareTagsProbe}); the page is then one statement over the tag index.
 */
export function listStages(
  f: NormalizedJobFilter,
  quotedSchema: string,
  jobColumns: string,
  options: { rareTags?: boolean } = {},
): ListStage[] {
  const select = `SELECT ${jobColumns}, ${KEY_SQL[f.orderBy]} FROM ${quotedSchema}.jobs j`;
  const base = (values: unknown[]) => filterConditions(f, values, quotedSchema);

  const { terminal, live } = parts(f);

  if (options.rareTags === true && f.tags.length > 0) {
    // Every part at once through jobs_tags_idx: fewer than RARE_TAG_ROWS rows to sort.
    return [
      (rows) => {
        const values: unknown[] = [];
        const conds = base(values);
        if (f.after?.order === 'finished_at_desc') conds.push(finishedKeysetAcrossSeam(f.after, values));
        else if (f.after) conds.push(keysetCondition(f.after, values));
        const text = `${select} ${where(conds)} ORDER BY ${ORDER_SQL[f.orderBy]} LIMIT ${bind(values, rows)}`;
        return { text, values };
      },
    ];
  }

  if (f.orderBy === 'finished_at_desc') {
    if (!terminal) {
      // Only live statuses (or none at all): one statement over the live jobs' indexes, sorted.
      // Walking jobs_finished_at_idx for them would read every finished job and keep none.
      return [
        (rows) => {
          const values: unknown[] = [];
          const conds = base(values);
          if (live) conds.push(LIVE_SQL);
          if (f.after?.order === 'finished_at_desc') conds.push(finishedKeysetAcrossSeam(f.after, values));
          const text = `${select} ${where(conds)} ORDER BY ${ORDER_SQL.finished_at_desc} LIMIT ${bind(values, rows)}`;
          return { text, values };
        },
      ];
    }
    const stages: ListStage[] = [];
    // Past the seam (a cursor on a job without finished_at), only the second part is left.
    if (f.after?.order !== 'finished_at_desc' || f.after.finishedAtUs !== null) {
      stages.push((rows) => {
        const values: unknown[] = [];
        const conds = [...base(values), 'j.finished_at IS NOT NULL'];
        if (f.after) conds.push(keysetCondition(f.after, values));
        // DESC without NULLS LAST: the order of a backward scan of jobs_finished_at_idx (no nulls here).
        const text = `${select} ${where(conds)} ORDER BY j.finished_at DESC, j.id DESC LIMIT ${bind(values, rows)}`;
        return { text, values };
      });
    }
    stages.push((rows) => {
      const values: unknown[] = [];
      const conds = [...base(values), 'j.finished_at IS NULL'];
      if (f.after?.order === 'finished_at_desc' && f.after.finishedAtUs === null)
        conds.push(keysetCondition(f.after, values));
      return { text: `${select} ${where(conds)} ORDER BY j.id DESC LIMIT ${bind(values, rows)}`, values };
    });
    return stages;
  }

  const sortColumns = SORT_COLUMNS[f.orderBy];
  const order = ORDER_SQL[f.orderBy];
  // One part per terminal status the filter reaches (the terminal indexes lead with the status, so
  // a rare status reads only its own entries, in order) and one for the live jobs. The statuses are
  // written as literals (from the fixed set above, never from input) so the planner sees which
  // index range each part reads; the filter's own status condition stays bound.
  const partsRead = [
    ...[...TERMINAL]
      .filter((s) => f.statuses === null || f.statuses.includes(s))
      .map((s) => `j.status = '${s}'`),
    ...(live ? [LIVE_SQL] : []),
  ];
  // The conditions of one part: the filter, the part's own predicate, the cursor. The live part
  // reads the tags as a filter over the live jobs, never through jobs_tags_idx: a common tag's
  // entries span the whole history, and reading them to pick out the few live jobs cost more than
  // the live jobs themselves (the planner underestimates how many rows a tag matches).
  const partConditions = (values: unknown[], part: string | undefined): string[] => {
    const conds = filterConditions(f, values, quotedSchema, { tagIndex: part !== LIVE_SQL });
    if (part !== undefined) conds.push(part);
    if (f.after) conds.push(keysetCondition(f.after, values));
    return conds;
  };
  return [
    (rows) => {
      const values: unknown[] = [];
      // One part (or none: an empty status list, which reads nothing): a plain statement.
      if (partsRead.length <= 1) {
        const conds = partConditions(values, partsRead[0]);
        return { text: `${select} ${where(conds)} ORDER BY ${order} LIMIT ${bind(values, rows)}`, values };
      }
      const limit = bind(values, rows);
      const arms = partsRead.map(
        (part) =>
          `(SELECT ${sortColumns} FROM ${quotedSchema}.jobs j ${where(partConditions(values, part))} ORDER BY ${order} LIMIT ${limit})`,
      );
      const merged = `SELECT j.id FROM (${arms.join(' UNION ALL ')}) j ORDER BY ${order} LIMIT ${limit}`;
      return { text: `${select} WHERE j.id IN (${merged}) ORDER BY ${order}`, values };
    },
  ];
}
