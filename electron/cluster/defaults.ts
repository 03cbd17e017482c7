// The cluster's default timings, apart from the NATS client so the CLI can show them without loading it.
export const DEFAULT_HEARTBEAT_MS = 2000;
/** How long a call to another node may take before it counts as unanswered. */
export const DEFAULT_CALL_TIMEOUT_MS = 10_000;
