// `npm run demo`: the demo on an embedded Postgres in ./.taskq-dev (or $TASKQ_DEV_DATA_DIR), or on
// the server in TASKQ_PG_DSN when it is set.
import { resolve } from 'node:path';

import { processIo } from '../../src/cli/io.js';
import { runDemo } from './main.js';

const dsn = process.env.TASKQ_PG_DSN?.trim() || null;
const dataDir = resolve(process.env.TASKQ_DEV_DATA_DIR?.trim() || '.taskq-dev');

process.exitCode = await runDemo({ io: processIo, dataDir, dsn });
