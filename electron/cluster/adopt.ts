// `hangar cluster init --adopt`: a cluster set up with `hangar cluster nats-config` moves to invitations. Its server
// keeps its name (every stored record and every trust line stays valid: they are signed for it), where it listens and
// its store: the buckets' directory moves from the STORE account's name to the new STORE account's key, which is
// where nats-server keeps an account's streams in operator mode. What changes is said, machine by machine.
import { readFile, rename, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { unreadableFile } from '../core/unreadable-file.ts';
import { HangarError } from '../../shared/errors.ts';

export interface OldConfig {
  /** The file it was read from. */
  file: string;
  cluster: string;
  listen: string;
  storeDir: string;
  /** Each machine it named, with its roles as the configuration's comments give them. */
  machines: Array<{ name: string; node: boolean; viewer: boolean }>;
}

/** Reads what `nats-config` wrote; one line when the file is not that. */
export async function readOldConfig(file: string): Promise<OldConfig> {
  const text = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    throw unreadableFile(`the configuration ${file} (--from)`, error);
  });
  const field = (pattern: RegExp) => {
    const match = pattern.exec(text);
    return match ? (JSON.parse(match[1]!) as string) : null;
  };
  const cluster = field(/^server_name: ("hangar-[0-9a-f]{24}")$/m);
  const listen = field(/^listen: ("[^"\n]*")$/m);
  const storeDir = field(/^jetstream \{ store_dir: ("[^"\n]*") \}$/m);
  if (!text.includes('written by `hangar cluster nats-config`') || !cluster || !listen || !storeDir) {
    throw new HangarError('bad-input', `${file} is not a configuration hangar cluster nats-config wrote (with a server_name): --adopt moves only those`);
  }
  const machines = [...text.matchAll(/^ {6}# ([A-Za-z0-9][A-Za-z0-9_-]{0,63}): (.*)$/gm)].map(([, name, roles]) => ({
    name: name!, node: /\bnode\b/.test(roles!), viewer: /\bviewer\b/.test(roles!),
  }));
  return { file, cluster, listen, storeDir, machines };
}

/** Moves the buckets from the STORE account's old directory to the new account's; false when there were none. */
export async function moveStore(storeDir: string, storeAccount: string): Promise<boolean> {
  const from = join(storeDir, 'jetstream', 'STORE');
  if (!(await stat(from).catch(() => null))?.isDirectory()) return false;
  await rename(from, join(storeDir, 'jetstream', storeAccount));
  return true;
}

/** What changes, for the admin `admin`, said after the move. */
export function adoptNotes(old: OldConfig, admin: string, storeMoved: boolean): string[] {
  const others = old.machines.filter((m) => m.name !== admin);
  return [
    `kept: the cluster's name ${old.cluster} (every stored record and trust line stays valid), its listening address ${old.listen}, and ${storeMoved ? 'its store (pins, rollouts, status)' : 'its store directory (it held no buckets yet)'}`,
    'changed: the passwords stop working once nats-server restarts on the new configuration; each machine joins once with an invitation that keeps its key and node id:',
    ...others.map((m) => `  ${m.name}: on this machine, hangar cluster invite --role ${m.node ? 'node' : 'viewer'} --name ${m.name} --key KEY_OF_${m.name} (hangar cluster key prints it there); there, the line that prints (HANGAR_JOIN_TOKEN=<token> hangar agent) instead of its old command`),
    ...(others.some((m) => m.node && m.viewer) ? ['  (a machine that was both node and viewer: invite it as a node and start it with --cluster-role node, or as a viewer; an invitation has one role)'] : []),
    `then here: hangar agent, with no option (as ${admin}: node, viewer and admin)`,
  ];
}
