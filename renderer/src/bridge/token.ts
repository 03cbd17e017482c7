// The agent's token arrives once in the URL fragment (#token=...); after that it lives in sessionStorage only.

const STORAGE_KEY = 'hangar.token';

/** Takes the token from the fragment (removing it from the address bar and history) or from the session. */
export function takeToken(): string | null {
  const fromFragment = new URLSearchParams(location.hash.slice(1)).get('token');
  if (fromFragment) {
    sessionStorage.setItem(STORAGE_KEY, fromFragment);
    history.replaceState(history.state, '', location.pathname + location.search);
    return fromFragment;
  }
  return sessionStorage.getItem(STORAGE_KEY);
}

export function rememberToken(token: string): void {
  sessionStorage.setItem(STORAGE_KEY, token);
}

export function forgetToken(): void {
  sessionStorage.removeItem(STORAGE_KEY);
}
