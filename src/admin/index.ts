// `taskq/admin`: the admin web UI (docs/ui.md).
export { adminPlugin } from './admin-plugin.js';
export { serveAdmin, type ServeAdminOptions, type AdminServer } from './serve-admin.js';
export {
  resolveAdminOptions,
  type AdminOptions,
  type AdminUser,
  type AdminAuthHook,
} from './admin-options.js';
export type { OidcOptions, SamlOptions, SsoSessionOptions } from './sso-options.js';
export { AdminAuthRequiredError } from '../errors/admin-errors.js';
