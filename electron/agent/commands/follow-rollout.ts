// How `hangar upgrade --on all`, `rollback --rollout` and `resume` follow a rolling upgrade that runs in the host.
import { cliIo } from '../cli-io.ts';
import { LOCAL_NODE } from '../../../shared/api.ts';
import type { RolloutNode, RolloutView } from '../../../shared/types.ts';
import type { WireClient } from '../../../shared/wire-client.ts';
import { rolloutTable } from '../format-cluster.ts';
import { pickId } from '../id-prefix.ts';
import { forTerminal, print } from './terminal.ts';

export const upgradeFailed = (n: RolloutNode) => n.step === 'failed';
export const rollbackFailed = (n: RolloutNode) => (n.reason ?? '').startsWith('rollback failed');

/** Follows a rollout (or its rollback) to its end, node by node on stderr, then prints each node's result. */
export async function followRollout(c: WireClient, options: { json?: boolean }, start: () => Promise<RolloutView>, failed: (n: RolloutNode) => boolean): Promise<void> {
  const early: RolloutView[] = [];
  let follow: ((r: RolloutView) => void) | null = null;
  const off = c.onEvent((e) => {
    if (e.type === 'rollout') (follow ?? ((r: RolloutView) => early.push(r)))(e.rollout);
  });
  const started = await start();
  // A rollout runs in the host, not in this command: Ctrl-C stops following it.
  process.once('SIGINT', () => {
    cliIo().stderr.write(`hangar: stopped following; rollout ${started.id} of ${started.backend} goes on in the host (see hangar rollouts)\n`);
    process.exit(130);
  });
  // What each node already was when the command started is not news.
  const shown = new Map(started.nodes.map((n) => [n.id, stepLine(n)]));
  const show = (rollout: RolloutView) => {
    for (const n of rollout.nodes) {
      if (shown.get(n.id) !== stepLine(n)) cliIo().stderr.write(forTerminal(`${rollout.backend}: ${stepLine(n)}\n`));
      shown.set(n.id, stepLine(n));
    }
  };
  const finished = (r: RolloutView) => r.state !== 'running' && r.state !== 'rolling-back';
  const final = await new Promise<RolloutView>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    let settled = false;
    const settle = (end: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      end();
    };
    const seen = (r: RolloutView) => {
      if (settled || r.id !== started.id) return;
      show(r);
      if (finished(r)) settle(() => resolve(r));
    };
    follow = seen;
    early.forEach(seen);
    // The rollout runs in the agent: an agent that dies takes it with it, and a viewer can resume it.
    void c.closed.then(({ code }) =>
      settle(() => reject(new Error(`the agent closed its connection (${code}) while it ran rollout ${started.id}: another viewer can see it interrupted and resume or roll it back (hangar rollouts)`))),
    );
    // Events carry the progress; a slow look at the record backs them up. A look that fails as the connection
    // closes is said by the close above, which comes a turn later and names the rollout.
    const poll = () => c.rollouts({ node: LOCAL_NODE }).then((all) => {
      const r = all.find((x) => x.id === started.id);
      if (r) seen(r);
      if (!settled) timer = setTimeout(poll, 2000);
    }, (error: Error) => setImmediate(() => settle(() => reject(error))));
    void poll();
  });
  off();
  const cards = options.json ? [] : await c.nodes({ node: LOCAL_NODE });
  print(options, final, () => rolloutTable(final, cards));
  if (final.nodes.some(failed)) cliIo().setExitCode(1);
}

/** The rollout `text` names: its id, or the first characters of one (as jobs take them). */
export async function rolloutId(c: WireClient, text: string): Promise<string> {
  return pickId((await c.rollouts({ node: LOCAL_NODE })).map((r) => r.id), text, { plural: 'rollouts', list: 'hangar rollouts' });
}

function stepLine(n: RolloutNode): string {
  return `${n.name} (${n.id}): ${n.step}${n.reason ? `: ${n.reason}` : ''}`;
}
