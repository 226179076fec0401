/**
 * docs/ui.md shows every page of the admin UI: each page in the navigation has a screenshot row,
 * and every image the page references exists (`npx tsx scripts/ui-screenshots.ts` makes them).
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';

import { describe, expect, it } from 'vitest';

import { NAV } from '../../src/admin/layout.js';

const doc = readFileSync(resolve('docs/ui.md'), 'utf8');
const section = doc.slice(doc.indexOf('## Screenshots'), doc.indexOf('## Live updates'));

describe('docs/ui.md screenshots', () => {
  it('has a screenshot row for every page in the navigation', () => {
    expect(section.length).toBeGreaterThan(0);
    for (const [path, label] of NAV) expect(section, `${label} (${path})`).toContain(`(\`${path}`);
  });

  it('references only images that exist', () => {
    const images = [...doc.matchAll(/!\[[^\]]*\]\(([^)]+\.png)\)/g)].map((m) => m[1] as string);
    expect(images.length).toBeGreaterThanOrEqual(NAV.length);
    for (const image of images) expect(existsSync(resolve('docs', image)), image).toBe(true);
  });
});
