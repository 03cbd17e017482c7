/** How long the NATS client waits before each try to reconnect, and the most it adds at random to spread them. */
export const RECONNECT_WAIT_MS = 500;
export const RECONNECT_JITTER_MS = 100;
/**
 * How long a revoked machine's client waits before each try: the server refuses it every time unless it is run again on
 * a configuration without the revocation, so it is asked rarely rather than twice a second for ever.
 */
export const REVOKED_RETRY_MS = 60_000;
