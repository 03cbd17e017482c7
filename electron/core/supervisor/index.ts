// The supervisor's public face: the node façade imports from here, and so does whatever outside core runs or
// watches processes of its own (the LocalAI runner and server link).
export { Supervisor, type BackendTarget, type DirectoryStop, type PortMove, type SupervisorOptions } from './supervisor.ts';
export { sameInode, type DirIdentity } from './identity.ts';
export { portIsFree } from './ports.ts';
export { DEFAULT_RESTART_RULES, RestartScheduler, type RestartHistory } from './restart-policy.ts';
export { BackendCallError, BackendClient } from './grpc-client.ts';
export { rowUsage } from './row-usage.ts';
export { placeOf } from './scan.ts';
export { alive, isSameProcess, signalTree, startTimeOf } from './signals.ts';
export { settlesWithin } from './tree-stop.ts';
