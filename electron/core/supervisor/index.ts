// The supervisor's public face: the node façade imports from here.
export { Supervisor, type BackendTarget, type DirectoryStop, type PortMove, type SupervisorOptions } from './supervisor.ts';
import { loadRuntime } from './grpc-client.ts';

/**
 * Loads what the first load of a model needs (gRPC and the backend protocol, the process library), which a host
 * leaves out of its start so it is up sooner: a host calls this once it is serving and idle, and the first load
 * then costs what every later one does.
 */
export async function warmUp(): Promise<void> {
  await Promise.all([loadRuntime(), import('execa')]);
}
