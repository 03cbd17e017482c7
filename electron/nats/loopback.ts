/** A host name that is this machine (`URL.hostname` spelling: IPv6 in brackets). Apart from connect.ts, so that what
 * only names an address (the CLI writing a configuration) does not load the NATS client. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
}
