// A URL may carry a user and a password (`https://user:secret@host/index.yaml`). The node sends them as HTTP basic
// auth, as LocalAI's downloader does (Go's client reads a URL's user info so), but never shows the password: what a
// node says (settings, errors, listings) holds `user:***@` instead, and `***@` for a token given as the user alone.

export const HIDDEN_PASSWORD = '***';

/**
 * A scheme, then the user info up to the last `@` before the host: a raw `@` in a password ends it only at the last
 * one, as URL parsers read it.
 */
const USER_INFO = /(\b[a-z][a-z0-9+.-]*:\/\/)([^\s/?#]+)@/gi;

/**
 * `text` with the password of every URL in it replaced by `***`; user info with no password is a token given as the
 * user (`https://TOKEN@host/`), and is hidden whole.
 */
export function hidePasswords(text: string): string {
  if (!text.includes('://')) return text;
  return text.replace(USER_INFO, (_match, scheme: string, info: string) => {
    const colon = info.indexOf(':');
    return `${scheme}${colon === -1 ? HIDDEN_PASSWORD : `${info.slice(0, colon)}:${HIDDEN_PASSWORD}`}@`;
  });
}

/** Whether `text` holds a URL with a password (or a token as its user) in it. */
export function holdsPassword(text: string): boolean {
  return hidePasswords(text) !== text;
}
