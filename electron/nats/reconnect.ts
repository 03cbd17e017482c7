/** How long the NATS client waits before each try to reconnect, and the most it adds at random to spread them. */
export const RECONNECT_WAIT_MS = 500;
export const RECONNECT_JITTER_MS = 100;
