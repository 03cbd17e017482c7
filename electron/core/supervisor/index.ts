// The supervisor's public face: the node façade imports from here.
export { Supervisor, type BackendTarget, type DirectoryStop, type SupervisorOptions } from './supervisor.ts';
