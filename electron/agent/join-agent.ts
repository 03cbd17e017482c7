// `HANGAR_JOIN_TOKEN=<token> hangar agent` (or `hangar agent --join -`, the token on stdin), and `hangar agent` alone on
// a home that joined by invitation (or ran `hangar cluster init`): the cluster options its membership gives. An
// invitation holds the machine's NATS credential and key, so it never goes on a command line, which every user of the
// machine can read for as long as the agent runs: the environment (readable by its owner only) or stdin carries it.
import { HangarError } from '../../shared/errors.ts';
import { joinedConnection, readJoined } from '../cluster/joined-home.ts';
import type { JoinOptions } from '../fleet/start.ts';
import { readStdin } from './commands/terminal.ts';

export interface InvitedCluster {
  cluster: JoinOptions & { url: string; name: string };
  labels: Record<string, string> | undefined;
}

export async function invitedCluster(home: string, join: string | undefined): Promise<InvitedCluster | null> {
  if (join !== undefined && join !== '-') throw new HangarError('invalid-request', INLINE_REFUSED);
  const fromEnv = process.env.HANGAR_JOIN_TOKEN || undefined;
  // Read once, and given to nothing this agent starts.
  delete process.env.HANGAR_JOIN_TOKEN;
  const token = join === '-' ? await readStdin() : fromEnv;
  if (token === '') throw new HangarError('bad-input', 'no invitation was given on stdin: paste the line hangar cluster invite printed, or its token');
  // The NATS client is loaded only to join.
  const redeem = token === undefined ? null : await import('../cluster/redeem.ts');
  // An invitation left in a service's environment must not stop the agent's every restart once its home joined: it
  // is said and not used. One given on stdin is a person's doing, and is refused (redeem.ts). A membership the server
  // refuses (revoked) is what a new invitation to the same cluster replaces.
  const held = token === undefined ? null : await readJoined(home);
  const replaced = held && (await redeem!.replacedMembership(home, token!));
  if (held && !replaced && join !== '-') process.stderr.write(`hangar: HANGAR_JOIN_TOKEN is not used: this home joined the cluster already, as ${held.name}\n`);
  else if (token !== undefined) {
    if (replaced) process.stderr.write(`hangar: the server refuses this home's membership (${replaced.name}): the invitation replaces it\n`);
    const joined = await redeem!.redeemInvitation(home, token);
    process.stderr.write(`hangar: joined cluster ${joined.cluster} at ${joined.url} as ${joined.name} (${joined.role}); from now on \`hangar agent\` alone joins it\n`);
  }
  const joined = await joinedConnection(home);
  if (!joined) return null;
  return { cluster: joined.cluster, labels: Object.keys(joined.labels).length > 0 ? joined.labels : undefined };
}

const INLINE_REFUSED =
  "an invitation holds this machine's NATS credential and key, and a command line is readable by every user of the machine: give it as HANGAR_JOIN_TOKEN=<token> hangar agent, or run hangar agent --join - and paste it";
