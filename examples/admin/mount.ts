// The admin UI mounted under /admin in your own Fastify app, behind your own authentication.
// Run it with `TASKQ_PG_DSN=postgres://… npx tsx examples/admin/mount.ts` (schema
// $TASKQ_SCHEMA_NAME, else taskq; migrated first). Examples run from the repository, so they import
// the package source; in your code, import from 'taskq' and 'taskq/admin' instead.
import Fastify from 'fastify';

import { adminPlugin } from '../../src/admin/index.js';
import { TaskQ } from '../../src/index.js';

const tq = await TaskQ.fromEnv(process.env);
const app = Fastify();

await app.register(adminPlugin, {
  prefix: '/admin',
  tq,
  // Your session, SSO proxy header or client certificate decides who this is; null answers 401.
  auth: async (request) => {
    const user = request.headers['x-forwarded-user'];
    if (typeof user !== 'string') return null;
    // Support staff may retry and cancel, but never see what the jobs carry.
    return { user, readPayloads: !user.startsWith('support-'), actions: true };
  },
  actionsEnabled: true,
  environment: process.env.TASKQ_ENVIRONMENT ?? null,
});

await app.listen({ host: '127.0.0.1', port: 3000 });
console.log('admin UI at http://127.0.0.1:3000/admin/');
