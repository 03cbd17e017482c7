// `hangar cluster init | invite | members | revoke`: a cluster whose machines join by invitation (NATS's operator,
// account and user JWTs), run on the admin's home, with or without a running agent.
import { CommanderError, type Command } from 'commander';
import { copyFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { cliIo } from './cli-io.ts';
import { LOCAL_NODE } from '../../shared/api.ts';
import { parseLabels as labelsOf } from '../../shared/selector.ts';
import type { OldConfig } from '../cluster/adopt.ts';
import { INVITE_MAX_MS, type InvitedRole } from '../cluster/invitation.ts';
import { loadIdentity } from '../cluster/node-key.ts';
import type { MemberView } from '../cluster/members.ts';
import { connect } from './connect.ts';
import { homeDir, readAgentUrl } from './paths.ts';
import type { Printed } from './cluster-cli.ts';
import { table } from './format.ts';
import { print } from './commands/terminal.ts';

/**
 * The commands of the cluster's admin. What they run (NATS, JetStream, the operator's JWTs) is loaded when one of them
 * runs: every other command, and `hangar agent`, starts without it.
 */
export function registerJoinCommands(cluster: Command, home: () => string): void {
  cluster.command('init').description('make this home the cluster\'s first admin: its keys, a nats-server configuration (operator mode), and this machine joined as node and viewer')
    .requiredOption('--url <url>', 'where the machines join the server, nats://HOST:PORT (a loopback address: it listens on loopback only)')
    .option('--out <file>', 'where to write the configuration, its store and accounts beside it (default: HOME/nats/nats.conf; with --adopt, the --from file)')
    .option('--name <name>', 'this machine\'s name in the cluster (default: the hostname)')
    .option('--adopt', 'move a cluster set up with hangar cluster nats-config to invitations, keeping its name, address and store (--from)')
    .option('--from <file>', 'with --adopt: the configuration nats-config wrote (default: --out, kept beside it as FILE.nats-config)')
    .option('--json', 'print JSON to stdout')
    .action(async (options: { url: string; out?: string; name?: string; adopt?: boolean; from?: string; json?: boolean }) => {
      if (options.from !== undefined && !options.adopt) throw new CommanderError(2, 'hangar.usage', '--from goes with --adopt');
      // Adopted, the configuration replaces the one nats-config wrote (by default in the working directory); new, it
      // goes in the admin's home, where revoke finds it, whichever directory init ran in.
      const from = options.from ?? options.out ?? 'nats.conf';
      const out = options.out ?? (options.adopt ? from : join(home(), 'nats', 'nats.conf'));
      const adopt = options.adopt ? await adoptedConfig(from, out) : undefined;
      const { initCluster } = await import('../cluster/init.ts');
      const made = await initCluster({ home: home(), url: options.url, out, name: options.name ?? defaultName(), adopt, say: (line) => cliIo().stderr.write(`hangar: ${line}\n`) });
      printed(options, {
        json: made,
        text: [
          `wrote ${made.config}: cluster ${made.cluster}, listening on ${made.listen}. Start the server with:`,
          `  nats-server -c ${made.config}`,
          `then this machine's agent (node, viewer and admin, as ${made.name}):`,
          // On a home other than the default one, the line names it: `hangar agent` alone would start on another.
          home() === homeDir(undefined) ? '  hangar agent' : `  hangar agent --home ${home()}`,
          'and invite each other machine: hangar cluster invite --role node (or viewer)',
          ...made.notes,
          '',
        ].join('\n'),
      });
    });

  cluster.command('invite').description('print the one command that joins another machine: HANGAR_JOIN_TOKEN=<token> hangar agent (used once, expires)')
    .requiredOption('--role <role>', 'node (serves this machine\'s backends), viewer (calls the nodes) or node+viewer', parseInvitedRole)
    .option('--key <key>', 'the machine\'s own key, as hangar cluster key prints it there: it keeps it and its node id (default: one is made for it)')
    .option('--name <name>', 'its name in the cluster (default: ROLE-xxxx)')
    .option('--labels <k=v,...>', 'its labels, as --on label:KEY=VALUE selects it', parseLabels, {})
    .option('--expires <time>', 'how long the invitation may be used, e.g. 30m, 1h, 2d (at most 7d)', parseDuration, 3_600_000)
    .option('--json', 'print JSON to stdout (with the token alone)')
    .action(async (options: { role: InvitedRole; name?: string; key?: string; labels: Record<string, string>; expires: number; json?: boolean }) => {
      const { invite } = await import('../cluster/invite.ts');
      const made = await invite({ home: home(), role: options.role, name: options.name, key: options.key, labels: options.labels, expiresMs: options.expires });
      if (!options.json) cliIo().stderr.write(`hangar: ${made.role} ${made.name}: run this on that machine before ${made.expires} (once; it holds the machine's NATS credential and key, so send it privately; \`hangar agent --join -\` reads it from stdin instead)\n`);
      printed(options, { json: made, text: `HANGAR_JOIN_TOKEN=${made.token} hangar agent\n` });
    });

  cluster.command('members').description('the machines invited to the cluster: role, who invited it and when, when it joined, last seen, whether it was revoked').option('--json', 'print JSON to stdout')
    .action(async (options: { json?: boolean }) => {
      const [{ adminOf }, { memberViews, readClaims }] = await Promise.all([import('../cluster/admin-home.ts'), import('../cluster/members.ts')]);
      const state = await adminOf(home());
      const [claims, seen] = await Promise.all([readClaims(home()), lastSeen(home())]);
      const known = typeof claims === 'string' ? null : claims;
      const members = memberViews(state, { claims: known, seen: seen ?? new Map() });
      const dash = (v: string | null) => v ?? '-';
      const rows = members.map(({ revocationCutShort, ...m }) => ({ ...m, expires: dash(m.expires), joined: dash(m.joined), lastSeen: dash(m.lastSeen), revoked: revocationCutShort ? `${m.revoked} (cut short)` : dash(m.revoked) }));
      const notes = [cutShortNote(members), typeof claims === 'string' ? `${claims}\n` : unusedNote(members), seen ? '' : 'no agent answers on this home: when each machine was last seen is not known (hangar agent starts one)\n'];
      printed(options, { json: members, text: table(rows, 'no members', notes.join('')) });
    });

  cluster.command('revoke').description('cut a machine off: its NATS user revoked on the server, its grant withdrawn').argument('<member>', 'its name, its key or its key id')
    .option('--config <file>', 'the server\'s configuration, where it is now if it was moved from where init wrote it (kept as its place from then on)')
    .option('--json', 'print JSON to stdout')
    .action(async (which: string, options: { config?: string; json?: boolean }) => {
      const { revoke } = await import('../cluster/revoke.ts');
      const { member, config, finished } = await revoke(home(), which, options.config);
      const done = finished ? `finished revoking ${member.name}, revoked at ${new Date(member.revokedAt!).toISOString()}` : `revoked ${member.name}`;
      printed(options, {
        json: { ...member, config, finished },
        text: `${done}: the server closed its connection and refuses it; no node takes its calls or records\nwrote ${config} again: a server restarted on it keeps refusing ${member.name}\n`,
      });
    });
}

function printed(options: { json?: boolean }, result: Printed): void {
  print(options, result.json, () => result.text);
}

/** Revocations the server took whose grant was not withdrawn: the nodes still trust those members' keys. */
function cutShortNote(members: MemberView[]): string {
  return members.filter((m) => m.revocationCutShort)
    .map((m) => `${m.name}'s revocation was cut short: its grant was not withdrawn, so the nodes still trust its key (hangar cluster revoke ${m.name} finishes it)\n`).join('');
}

/** Invitations that expired unused: the credential they carry still logs in until it is revoked. */
function unusedNote(members: MemberView[]): string {
  const unused = members.filter((m) => m.joined === null && m.revoked === null && m.expires !== null && Date.parse(m.expires) < Date.now());
  return unused.map((m) => `${m.name}'s invitation expired unused; the credential it carries still logs in: hangar cluster revoke ${m.name}\n`).join('');
}

/**
 * When each node was last seen, as this home's running agent has it, its own machine `now` (listed as `local` when it
 * only views the cluster); null when no agent runs.
 */
async function lastSeen(home: string): Promise<Map<string, string> | null> {
  if ((await readAgentUrl(home)) === null) return null;
  const client = await connect({ home }).catch(() => null);
  if (!client) return null;
  try {
    const [cards, own] = await Promise.all([client.nodes({ node: LOCAL_NODE }).catch(() => []), loadIdentity(home)]);
    return new Map(cards.map((c) => (c.self ? [own.id, 'now'] : [c.id, c.lastSeen])));
  } finally {
    client.close();
  }
}

/** The hostname, as a machine's name may be spelled. */
function defaultName(): string {
  return hostname().replace(/[^A-Za-z0-9_-]/g, '-').replace(/^[^A-Za-z0-9]+/, '').slice(0, 64) || 'admin';
}

function parseInvitedRole(value: string): InvitedRole {
  if (value === 'node' || value === 'viewer' || value === 'node+viewer') return value;
  throw new CommanderError(2, 'hangar.usage', `--role wants node, viewer or node+viewer, got "${value}"`);
}

/** The configuration nats-config wrote, read; kept beside it when the new one is written over it. */
async function adoptedConfig(from: string, out: string): Promise<OldConfig> {
  const { readOldConfig } = await import('../cluster/adopt.ts');
  const old = await readOldConfig(from);
  if (resolve(from) === resolve(out)) await copyFile(from, `${from}.nats-config`);
  return old;
}

function parseLabels(value: string): Record<string, string> {
  try {
    return labelsOf(value);
  } catch (error) {
    throw new CommanderError(2, 'hangar.usage', `--labels ${(error as Error).message}`);
  }
}

const UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

function parseDuration(value: string): number {
  const match = /^(\d{1,4})([mhd])$/.exec(value);
  const ms = match ? Number(match[1]) * UNITS[match[2]!]! : NaN;
  if (!(ms >= 60_000 && ms <= INVITE_MAX_MS)) throw new CommanderError(2, 'hangar.usage', `--expires wants a time from 1m to 7d (30m, 1h, 2d), got "${value}"`);
  return ms;
}
