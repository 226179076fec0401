import type { Command } from 'commander';

import type { JobFilter } from '../backend/job-filter.js';
import { JobSortField } from '../backend/cursor.js';
import { MAX_LIST_LIMIT } from '../backend/job-filter.js';
import { JOB_STATUSES, type JobStatus } from '../backend/types.js';
import type { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { CliExit } from './io.js';

/** The filter flags of `taskq jobs list` and `taskq jobs cancel --where`, as commander parses them. */
export interface JobFilterFlags {
  /** `--queue`: queue name equals. */
  queue?: string;
  /** `--status`, every value of every occurrence, split on commas. */
  status?: string[];
  /** `--actor`: actor name equals. */
  actor?: string;
  /** `--identity-key`: identity key equals. */
  identityKey?: string;
  /** `--batch-id`: the jobs of one batch. */
  batchId?: string;
  /** `--tag`, every value of every occurrence, split on commas: jobs carrying all of them. */
  tag?: string[];
  /** `--active`: jobs not finished. */
  active?: boolean;
  /** `--finished`: jobs in a terminal status. */
  finished?: boolean;
}

/** The paging flags of `taskq jobs list`. */
export interface JobPageFlags {
  /** `--limit`: rows per page, as typed. */
  limit?: string;
  /** `--cursor`: a previous page's `nextCursor`. */
  cursor?: string;
  /** `--order-by`: one of `JobSortField`'s values. */
  orderBy?: string;
}

/** Repeatable, comma-separated values: `--status failed,crashed --status cancelled`. */
const collect = (value: string, previous: string[] = []): string[] => [
  ...previous,
  ...value.split(',').map((v) => v.trim()),
];

/** Adds the filter flags (every predicate of `JobFilter`) to `c`. */
export function withJobFilterFlags(c: Command): Command {
  return c
    .option('--queue <queue>', 'only this queue')
    .option('--status <status>', 'only these statuses (comma-separated or repeated)', collect)
    .option('--actor <actor>', 'only this actor')
    .option('--identity-key <key>', 'only jobs with this identity key')
    .option('--batch-id <uuid>', 'only jobs of this batch')
    .option(
      '--tag <tag>',
      'only jobs carrying every one of these tags (comma-separated or repeated)',
      collect,
    )
    .option('--active', 'only jobs not finished (pending, scheduled, running)')
    .option('--finished', 'only finished jobs (any terminal status)');
}

/** Adds the paging flags of `taskq jobs list` to `c`. */
export function withJobPageFlags(c: Command): Command {
  return c
    .option('--limit <n>', `rows per page (0-${MAX_LIST_LIMIT}, default 100)`)
    .option('--cursor <cursor>', "the next page: a previous page's next cursor, unchanged")
    .option('--order-by <order>', `${Object.values(JobSortField).join(', ')} (default scheduled_at_asc)`);
}

/**
 * The `JobFilter` of the flags. Values are checked by the client (`normalizeJobFilter`); an error
 * there is renamed to the flag by {@link flagOfFilterError}.
 * @throws CliExit (2) for `--active` with `--finished`, or a `--limit` that is not a number
 */
export function jobFilterOf(flags: JobFilterFlags & JobPageFlags): JobFilter {
  if (flags.active && flags.finished)
    throw new CliExit(2, '--active and --finished are mutually exclusive: give one');
  if ((flags.active || flags.finished) && flags.status !== undefined)
    throw new CliExit(
      2,
      `--status and --${flags.active ? 'active' : 'finished'} are mutually exclusive: give one`,
    );
  // Each status is checked here so that the error quotes the one that is wrong, not the list.
  const unknown = flags.status?.find((s) => !(JOB_STATUSES as readonly string[]).includes(s));
  if (unknown !== undefined)
    throw new CliExit(
      2,
      `--status: ${JSON.stringify(unknown)} is invalid: must be one of ${JOB_STATUSES.join(', ')}`,
    );
  const filter: JobFilter = {};
  if (flags.queue !== undefined) filter.queue = flags.queue;
  if (flags.status !== undefined) filter.status = flags.status as JobStatus[];
  if (flags.actor !== undefined) filter.actor = flags.actor;
  if (flags.identityKey !== undefined) filter.identityKey = flags.identityKey;
  if (flags.batchId !== undefined) filter.batchId = flags.batchId;
  if (flags.tag !== undefined) filter.tags = flags.tag;
  if (flags.active) filter.active = true;
  if (flags.finished) filter.active = false;
  if (flags.limit !== undefined) {
    if (!/^\d+$/.test(flags.limit.trim()))
      throw new CliExit(
        2,
        `--limit: ${JSON.stringify(flags.limit)} is invalid: must be an integer from 0 to ${MAX_LIST_LIMIT}`,
      );
    filter.limit = Number(flags.limit);
  }
  if (flags.cursor !== undefined) filter.cursor = flags.cursor;
  if (flags.orderBy !== undefined) filter.orderBy = flags.orderBy as JobFilter['orderBy'];
  return filter;
}

/** The client's field names as the flags and arguments the user typed. */
const FLAG_OF_FIELD: readonly [field: string, flag: string][] = [
  ['filter.queue', '--queue'],
  ['filter.status', '--status'],
  ['filter.actor', '--actor'],
  ['filter.identityKey', '--identity-key'],
  ['filter.batchId', '--batch-id'],
  ['filter.tags', '--tag'],
  ['filter.active', '--active'],
  ['filter.limit', '--limit'],
  ['filter.cursor', '--cursor'],
  ['filter.orderBy', '--order-by'],
  ['cancelWhere.reason', '--reason'],
  ['cancel.reason', '--reason'],
  ['jobId', '<id>'],
];

/**
 * An InvalidArgumentError's message with its field renamed to the flag the user typed
 * (`--status: ["done"] is invalid: unknown status "done"; valid: ...`).
 */
export function flagOfFilterError(err: InvalidArgumentError): string {
  const hit = FLAG_OF_FIELD.find(([field]) => err.field === field || err.field.startsWith(`${field}[`));
  if (!hit || !err.message.startsWith(err.field)) return err.message;
  return `${hit[1]}${err.field.slice(hit[0].length)}${err.message.slice(err.field.length)}`;
}
