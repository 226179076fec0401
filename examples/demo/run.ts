// `npm run demo`: the demo on an embedded Postgres in ./.taskq-dev (or $TASKQ_DEV_DATA_DIR), or on
// the server in TASKQ_PG_DSN when it is set.
import { resolve } from 'node:path';

import { processIo } from '../../src/cli/io.js';
import { validateConnectionString } from '../../src/db/connection-string.js';
import { TaskQError } from '../../src/errors/taskq-error.js';
import { runDemo } from './main.js';

const dataDir = resolve(process.env.TASKQ_DEV_DATA_DIR?.trim() || '.taskq-dev');

try {
  const raw = process.env.TASKQ_PG_DSN?.trim();
  const dsn = raw ? validateConnectionString(raw, 'TASKQ_PG_DSN') : null;
  process.exitCode = await runDemo({ io: processIo, dataDir, dsn });
} catch (err) {
  // A bad DSN, an unreachable server, PGlite not installed: the message says what to do.
  if (!(err instanceof TaskQError)) throw err;
  processIo.err(`demo: ${err.message}`);
  process.exitCode = 2;
}
