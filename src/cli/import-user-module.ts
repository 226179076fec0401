import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

import { CliExit } from './io.js';

const TYPESCRIPT_EXTENSIONS = ['.ts', '.mts', '.cts'];

/** Where tsx's register entry points are, as files to `import()`. */
export interface TsxApi {
  /** `tsx/esm/api` (ES modules). */
  esm: string;
  /** `tsx/cjs/api` (CommonJS, for `.cts` files and projects without `"type": "module"`). */
  cjs: string;
}

/** Seams for tests; the defaults are the real ones. */
export interface ImportUserModuleOptions {
  /** Imports a module by URL. */
  importModule?: (url: string) => Promise<Record<string, unknown>>;
  /** Finds tsx as installed for `file`'s project, or null when it is not. */
  resolveTsx?: (file: string) => TsxApi | null;
}

/**
 * Imports the user's `--module` file. Node.js 20 cannot import TypeScript: when a `.ts` / `.mts` /
 * `.cts` file fails to load for that reason, tsx is taken from the user's own project (resolved
 * from the file's folder) and registered through its register API, and the file is imported again;
 * without tsx the command ends with what to install. A runtime that already loads TypeScript (the
 * `tsx` command, `--import tsx`, Node's type stripping) imports the file directly.
 * @throws CliExit (2) when TypeScript cannot be loaded; other load errors propagate
 */
export async function importUserModule(
  file: string,
  modulePath: string,
  options: ImportUserModuleOptions = {},
): Promise<Record<string, unknown>> {
  const importModule =
    options.importModule ?? ((url: string) => import(url) as Promise<Record<string, unknown>>);
  const url = pathToFileURL(file).href;
  try {
    return await importModule(url);
  } catch (err) {
    const typescript = TYPESCRIPT_EXTENSIONS.includes(extname(file).toLowerCase());
    if (!typescript || (err as { code?: unknown }).code !== 'ERR_UNKNOWN_FILE_EXTENSION') throw err;
  }
  const tsx = (options.resolveTsx ?? resolveTsx)(file);
  if (tsx === null) {
    throw new CliExit(
      2,
      `--module ${modulePath}: Node.js ${process.version} cannot load TypeScript by itself, and tsx is not ` +
        `installed in this project. Install it (npm install -D tsx) and run the command again, or pass ` +
        `the compiled JavaScript module instead (for example --module ./dist/actors.js).`,
    );
  }
  await registerTsx(tsx);
  // Node keeps the failed load of `url`; the query makes this a new module (its imports are not).
  return importModule(`${url}?taskq-tsx`);
}

/** tsx's register entry points, resolved from `file` as Node would resolve `import 'tsx/esm/api'` there. */
export function resolveTsx(file: string): TsxApi | null {
  let manifestPath: string;
  try {
    manifestPath = createRequire(file).resolve('tsx/package.json');
  } catch {
    return null;
  }
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { exports?: Record<string, unknown> };
  // The `import` target of an exports entry: a string, or { import: string | { default: string } }.
  const target = (subpath: string): string | null => {
    const entry = manifest.exports?.[subpath] as
      string | { import?: string | { default?: string }; default?: string } | undefined;
    const chosen = typeof entry === 'string' ? entry : (entry?.import ?? entry?.default);
    const path = typeof chosen === 'string' ? chosen : chosen?.default;
    return typeof path === 'string' ? join(dirname(manifestPath), path) : null;
  };
  const esm = target('./esm/api');
  const cjs = target('./cjs/api');
  if (esm === null || cjs === null) {
    throw new CliExit(
      2,
      `tsx at ${dirname(manifestPath)} has no register API (tsx 4 or newer has it): npm install -D tsx@latest`,
    );
  }
  return { esm, cjs };
}

let registered: Promise<void> | null = null;

/** Registers tsx's ES module and CommonJS hooks for the rest of the process, once. */
function registerTsx(tsx: TsxApi): Promise<void> {
  registered ??= (async () => {
    for (const entry of [tsx.esm, tsx.cjs]) {
      const api = (await import(pathToFileURL(entry).href)) as { register?: () => unknown };
      if (typeof api.register !== 'function') {
        throw new CliExit(
          2,
          `tsx's ${entry} has no register(); install tsx 4 or newer: npm install -D tsx@latest`,
        );
      }
      api.register();
    }
  })();
  return registered;
}
