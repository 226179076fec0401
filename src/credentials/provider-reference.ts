/**
 * Credential providers named in settings and CLI flags: `<module>:<export>` (or `<module>#<export>`),
 * the module a path (relative to the working directory) or a package name, the export an instance, a
 * zero-argument factory (sync or async) or a class.
 */
import { createRequire } from 'node:module';
import { isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

import { CredentialProviderReferenceError } from '../errors/credential-errors.js';
import type { PgCredentialProvider, RedisCredentialProvider } from './credential-types.js';

/** The rule a provider reference follows (settings errors and docs). */
export const PROVIDER_REFERENCE_RULE =
  'must be <module>:<export> (or <module>#<export>), e.g. ./auth/vault.js:provider or @acme/db-auth:makeProvider';

const EXPORT_NAME = /^[A-Za-z_$][\w$]*$/;

/** The module and export of a reference, or the rule it breaks. */
export function parseProviderReference(
  reference: string,
): { module: string; exportName: string } | { problem: string } {
  // The last separator: a Windows path (C:\…) has a colon of its own.
  const at = Math.max(reference.lastIndexOf(':'), reference.lastIndexOf('#'));
  const module = reference.slice(0, Math.max(at, 0)).trim();
  const exportName = reference.slice(at + 1).trim();
  if (at <= 0 || module === '' || !EXPORT_NAME.test(exportName)) return { problem: PROVIDER_REFERENCE_RULE };
  return { module, exportName };
}

/** The settings check: the broken rule, or `undefined` for a well-formed reference. */
export function providerReferenceProblem(reference: string): string | undefined {
  const parsed = parseProviderReference(reference);
  return 'problem' in parsed ? parsed.problem : undefined;
}

/** Which provider a reference must name. */
export type ProviderKind = 'pg' | 'redis';

/** Options of {@link resolveCredentialProvider}. */
export interface ResolveProviderOptions {
  /** Where relative module paths and package names resolve from. Default `process.cwd()`. */
  cwd?: string;
  /**
   * Imports a module file (the CLI passes its loader, which also takes TypeScript through tsx).
   * Default: `import()` of the file URL.
   */
  importFile?: (file: string, module: string) => Promise<Record<string, unknown>>;
}

const METHOD = { pg: 'getPgCredential', redis: 'getRedisCredential' } as const;

/** The provider type of a kind. */
export type ProviderOf<K extends ProviderKind> = K extends 'pg'
  ? PgCredentialProvider
  : RedisCredentialProvider;

const isPath = (m: string): boolean => m.startsWith('.') || isAbsolute(m) || m.startsWith('file:');

/** The file a module reference names: a path from `cwd`, or a package resolved as from `cwd`. */
function moduleFile(module: string, cwd: string): string {
  if (module.startsWith('file:')) return new URL(module).pathname;
  if (isPath(module)) return resolve(cwd, module);
  return createRequire(join(cwd, 'noop.js')).resolve(module);
}

function isClass(fn: unknown): boolean {
  return typeof fn === 'function' && /^class[\s{]/.test(Function.prototype.toString.call(fn));
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

/**
 * Imports `reference` and returns the provider it names: the export itself when it has the provider
 * method (`getPgCredential` / `getRedisCredential`), `new Export()` for a class, `await Export()` for
 * a function.
 * @param source where the reference came from, for the error (`--pg-credential-provider`, a variable)
 * @throws CredentialProviderReferenceError naming the source, the reference and what is wrong: a
 *   malformed reference, a module not found or failing to load, a missing export, a wrong shape
 */
export async function resolveCredentialProvider<K extends ProviderKind>(
  reference: string,
  kind: K,
  source: string,
  options: ResolveProviderOptions = {},
): Promise<ProviderOf<K>> {
  const fail = (reason: string, cause?: unknown): never => {
    throw new CredentialProviderReferenceError(
      source,
      reference,
      reason,
      cause === undefined ? {} : { cause },
    );
  };
  const parsed = parseProviderReference(reference);
  if ('problem' in parsed) return fail(parsed.problem);
  const cwd = options.cwd ?? process.cwd();
  let file: string;
  try {
    file = moduleFile(parsed.module, cwd);
  } catch (err) {
    return fail(
      `module "${parsed.module}" not found from ${cwd} (install the package, or give a path starting with ./)`,
      err,
    );
  }
  let mod: Record<string, unknown>;
  try {
    mod = options.importFile
      ? await options.importFile(file, parsed.module)
      : ((await import(pathToFileURL(file).href)) as Record<string, unknown>);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND' || code === 'ENOENT')
      if (String((err as Error).message).includes(file) || !isPath(parsed.module))
        return fail(`module not found: ${file} (paths are relative to ${cwd})`, err);
    return fail(`module ${file} failed to load: ${(err as Error).message ?? String(err)}`, err);
  }
  const method = METHOD[kind];
  if (!(parsed.exportName in mod) || mod[parsed.exportName] === undefined) {
    const names = Object.keys(mod).filter((n) => n !== '__esModule');
    return fail(
      `module ${file} has no export "${parsed.exportName}" (its exports: ${names.length > 0 ? names.join(', ') : 'none'})`,
    );
  }
  const exported = mod[parsed.exportName];
  const shapeRule =
    `export an object with a ${method}() method, a zero-argument function returning one ` +
    '(or a promise of one), or a class whose instances have it';
  const hasMethod = (v: unknown): boolean =>
    v !== null && typeof v === 'object' && typeof (v as Record<string, unknown>)[method] === 'function';
  if (hasMethod(exported)) return exported as ProviderOf<K>;
  if (typeof exported !== 'function')
    return fail(`export "${parsed.exportName}" is ${describe(exported)}, not a provider: ${shapeRule}`);
  let made: unknown;
  try {
    made = isClass(exported) ? new (exported as new () => unknown)() : await (exported as () => unknown)();
  } catch (err) {
    return fail(
      `calling export "${parsed.exportName}" failed: ${(err as Error).message ?? String(err)}`,
      err,
    );
  }
  if (hasMethod(made)) return made as ProviderOf<K>;
  return fail(
    `export "${parsed.exportName}" ${isClass(exported) ? 'constructs' : 'returns'} ${describe(made)} without a ${method}() method: ${shapeRule}`,
  );
}
