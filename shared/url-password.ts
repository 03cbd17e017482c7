// A URL may carry a user and a password (`https://user:secret@host/index.yaml`). The node sends them as HTTP basic
// auth, as LocalAI's downloader does (Go's client reads a URL's user info so), but never shows the password: what a
// node says (settings, errors, listings) holds `user:***@` instead.

export const HIDDEN_PASSWORD = '***';

/**
 * A scheme, then a user, a colon and the password up to the last `@` before the host: a raw `@` in a password ends the
 * user info only at the last one, as URL parsers read it.
 */
const PASSWORD_IN_URL = /(\b[a-z][a-z0-9+.-]*:\/\/[^\s/?#@:]*:)[^\s/?#]+@/gi;

/** `text` with the password of every URL in it replaced by `***`. */
export function hidePasswords(text: string): string {
  return text.includes('://') ? text.replace(PASSWORD_IN_URL, `$1${HIDDEN_PASSWORD}@`) : text;
}

/** Whether `text` holds a URL with a password in it. */
export function holdsPassword(text: string): boolean {
  return hidePasswords(text) !== text;
}
