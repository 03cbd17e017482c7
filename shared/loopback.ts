/**
 * A host name that is this machine (`URL.hostname` spelling: IPv6 in brackets). A module of its own, so that what only
 * names an address (the CLI writing a NATS configuration) loads no client library.
 */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
}
