/**
 * A tiny browser stand-in over `fetch`: it keeps cookies (by name; every server in a test runs on
 * 127.0.0.1, and cookies are not separated by port anyway) and follows redirects itself, so a test
 * can walk a sign-in through an identity provider and back.
 */
export class CookieFetch {
  /** The cookies held, by name. */
  readonly cookies = new Map<string, string>();

  /** One request (no redirect following), sending and then storing cookies. */
  async request(
    url: string,
    init: { method?: string; form?: Record<string, string> } = {},
  ): Promise<Response> {
    const headers: Record<string, string> = { accept: 'text/html' };
    if (this.cookies.size > 0) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    let body: string | undefined;
    if (init.form !== undefined) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(init.form).toString();
    }
    const response = await fetch(url, { method: init.method ?? 'GET', headers, body, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) {
      const [pair = '', ...attrs] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expired = attrs.some(
        (a) => /^\s*max-age=0\s*$/i.test(a) || /^\s*expires=thu, 01 jan 1970/i.test(a),
      );
      if (expired || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return response;
  }

  /** Requests `url` and follows redirects (303 and 302 become GET), returning the last response. */
  async follow(
    url: string,
    init: { method?: string; form?: Record<string, string> } = {},
  ): Promise<{ response: Response; url: string; visited: string[] }> {
    const visited: string[] = [];
    let current = url;
    let response = await this.request(current, init);
    for (let hops = 0; response.status >= 300 && response.status < 400; hops++) {
      if (hops > 20) throw new Error(`too many redirects from ${url}: ${visited.join(' -> ')}`);
      visited.push(current);
      current = new URL(response.headers.get('location') ?? '', current).href;
      response = await this.request(current);
    }
    return { response, url: current, visited };
  }
}

/** The first form of an HTML page: its absolute action URL and its hidden fields. */
export function formOf(page: string, pageUrl: string): { action: string; fields: Record<string, string> } {
  const form = /<form[^>]*action="([^"]*)"[^>]*>([\s\S]*?)<\/form>/i.exec(page);
  if (form === null) throw new Error(`no form on ${pageUrl}:\n${page.slice(0, 2000)}`);
  const decode = (s: string) =>
    s
      .replace(/&amp;/g, '&')
      .replace(/&#x2F;/g, '/')
      .replace(/&quot;/g, '"');
  const fields: Record<string, string> = {};
  for (const m of (form[2] ?? '').matchAll(/<input[^>]*type="hidden"[^>]*>/gi)) {
    const name = /name="([^"]*)"/.exec(m[0])?.[1];
    const value = /value="([^"]*)"/.exec(m[0])?.[1];
    if (name !== undefined) fields[name] = decode(value ?? '');
  }
  return { action: new URL(decode(form[1] ?? ''), pageUrl).href, fields };
}
