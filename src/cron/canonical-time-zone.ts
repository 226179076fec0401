import { RecentCache } from './recent-cache.js';

/**
 * The canonical spelling of an IANA time zone as this runtime's `Intl` reports it (for example
 * `america/new_york` → `America/New_York`), or null when the runtime does not know the zone.
 *
 * Fixed-offset strings such as `+05:30` are refused (null) even on runtimes whose `Intl` accepts
 * them: a schedule names a place, whose offset history `Intl` knows, and the same input must be
 * valid or invalid on every supported Node version.
 */
export function canonicalTimeZone(timezone: string): string | null {
  // Building an Intl.DateTimeFormat is most of a spec check's cost (~0.1 ms), and the answer for a
  // name never changes within a process.
  const known = canonical.get(timezone);
  if (known !== undefined) return known;
  const answer = resolveTimeZone(timezone);
  canonical.set(timezone, answer);
  return answer;
}

const canonical = new RecentCache<string, string | null>(1000);

function resolveTimeZone(timezone: string): string | null {
  if (timezone.trim() === '' || /^[+-]/.test(timezone.trim())) return null;
  let resolved: string;
  try {
    resolved = new Intl.DateTimeFormat('en-US', { timeZone: timezone }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
  return /^[+-]/.test(resolved) ? null : resolved;
}
