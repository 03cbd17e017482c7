// `hangar agent --join <token>`, and `hangar agent` alone on a home that joined by invitation (or ran `hangar cluster
// init`): the cluster options its membership gives. The invitation is on the command line because the issue's one
// command puts it there; it is used once and expires soon, so a copy left in a shell's history or the process list
// joins nothing. `--join -` reads it from stdin, and $HANGAR_JOIN_TOKEN is read on a home that joined no cluster yet.
import { joinedConnection, readJoined } from '../cluster/joined-home.ts';
import type { JoinOptions } from '../fleet/start.ts';

export interface InvitedCluster {
  cluster: JoinOptions & { url: string; name: string };
  labels: Record<string, string> | undefined;
}

export async function invitedCluster(home: string, join: string | undefined): Promise<InvitedCluster | null> {
  const token = join === '-' ? await readStdin() : (join ?? ((await readJoined(home)) ? undefined : process.env.HANGAR_JOIN_TOKEN || undefined));
  if (token !== undefined) {
    // The NATS client is loaded only to join.
    const { redeemInvitation } = await import('../cluster/redeem.ts');
    const joined = await redeemInvitation(home, token);
    process.stderr.write(`hangar: joined cluster ${joined.cluster} at ${joined.url} as ${joined.name} (${joined.role}); from now on \`hangar agent\` alone joins it\n`);
  }
  const joined = await joinedConnection(home);
  if (!joined) return null;
  return { cluster: joined.cluster, labels: Object.keys(joined.labels).length > 0 ? joined.labels : undefined };
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString().trim();
}
