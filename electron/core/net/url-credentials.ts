// A URL's user info as HTTP basic auth. fetch refuses a URL that holds credentials; Go's client, which LocalAI's
// downloader uses, sends them as an Authorization header instead. So does the node: to that URL only, and to one it
// is redirected to on the same origin (fetch drops the header on a redirect to another origin).

/** The URL without its user info, and the basic-auth header value it stood for (null when it had none). */
export function credentialed(url: string): { url: string; authorization: string | null } {
  if (!url.includes('@') || !URL.canParse(url)) return { url, authorization: null };
  const parsed = new URL(url);
  if (parsed.username === '' && parsed.password === '') return { url, authorization: null };
  const pair = `${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}`;
  parsed.username = '';
  parsed.password = '';
  return { url: parsed.href, authorization: `Basic ${Buffer.from(pair).toString('base64')}` };
}

/**
 * `reached` (where a fetch of `asked` ended) with `asked`'s user info when both are on one origin: a relative link in
 * what was fetched then resolves to a URL the same credentials go with, as a relative link does in Go.
 */
export function withUserInfoOf(asked: string, reached: string): string {
  if (!URL.canParse(asked) || !URL.canParse(reached)) return reached;
  const from = new URL(asked);
  const to = new URL(reached);
  if (from.origin !== to.origin || (from.username === '' && from.password === '')) return reached;
  to.username = from.username;
  to.password = from.password;
  return to.href;
}
