// How a `hangar localai` command that changes LocalAI runs: a failure is its one line, after the lines of the LocalAI
// process that failed if one did; and Ctrl-C on an install, upgrade or rollback cancels it, as it cancels a backend's
// job, unless its swap has begun (then it goes on), and on a start stops LocalAI before it is ready; a second Ctrl-C
// leaves it running and says how to follow it.
import { cliIo } from '../cli-io.ts';
import { LOCAL_NODE } from '../../../shared/api.ts';
import { messageOf } from '../../../shared/error-text.ts';
import { pastCancelText } from '../../../shared/localai-text.ts';
import type { LocalAiOperation, LocalAiRunView } from '../../../shared/types.ts';
import type { WireClient } from '../../../shared/wire-client.ts';
import { forTerminal } from './terminal.ts';

const say = (line: string) => cliIo().stderr.write(`hangar: ${forTerminal(line)}\n`);

/**
 * Runs `work`; when it fails because a LocalAI process did (a start, or the new build in a swap), the lines that
 * process wrote go to stderr before the error. Any other failure (bad input, a refused release) is its one line.
 */
export async function saying(c: WireClient, node: string, work: () => Promise<LocalAiRunView>): Promise<LocalAiRunView> {
  const before = await c.localaiRun({ node });
  try {
    return await work();
  } catch (error) {
    const after = await c.localaiRun({ node }).catch(() => null);
    const lines = after ? failedProcessLines(before, after) : [];
    if (lines.length > 0) cliIo().stderr.write(`LocalAI's last log lines:\n${lines.map((l) => `  ${l}\n`).join('')}`);
    throw error;
  }
}

/** The lines of the LocalAI process whose failure is new since `before`: an operation's failed build, or a start's. */
function failedProcessLines(before: LocalAiRunView, after: LocalAiRunView): string[] {
  const operation = after.operation;
  if (operation?.state === 'failed' && operation.startedAt !== before.operation?.startedAt && operation.logTail.length > 0) return operation.logTail;
  const start = after.failedStart;
  return start && start.at !== before.failedStart?.at ? start.logTail : [];
}

/** What Ctrl-C stops, in the words said about it. */
export interface Interruption {
  /** "the LocalAI upgrade", "LocalAI's start". */
  what: string;
  /** Asks the agent to cancel it: the line to end with, or null when it goes on (said here already). */
  cancel(): Promise<string | null>;
  /** For a second Ctrl-C: "`hangar localai status` follows it, …". */
  following: string;
}

/** An install, upgrade or rollback: Ctrl-C cancels it unless its swap has begun. */
export function operationInterruption(c: WireClient, node: string, kind: LocalAiOperation['kind']): Interruption {
  const on = onNode(node);
  return {
    what: `the LocalAI ${kind}`,
    cancel: async () => {
      const answer = await c.localaiCancel({ node });
      if (answer.cancelled) return answer.message;
      say(pastCancelText(answer));
      return null;
    },
    following: `\`hangar localai status${on}\` follows it, \`hangar localai cancel${on}\` cancels it`,
  };
}

/** A start (or a restart's start): Ctrl-C stops LocalAI before it is ready. */
export function startInterruption(c: WireClient, node: string): Interruption {
  const on = onNode(node);
  return {
    what: "LocalAI's start",
    cancel: async () => {
      await c.localaiControl({ node, action: 'stop' });
      return 'stopped LocalAI before it was ready';
    },
    following: `\`hangar localai status${on}\` follows it, \`hangar localai stop${on}\` stops it`,
  };
}

const onNode = (node: string) => (node === LOCAL_NODE ? '' : ` --on ${node}`);

/** `saying`, answering Ctrl-C: resolves with the view, or null once Ctrl-C cancelled it (exit status 130). */
export async function interruptible(c: WireClient, node: string, interruption: Interruption, work: () => Promise<LocalAiRunView>): Promise<LocalAiRunView | null> {
  const { what } = interruption;
  let cancelling: Promise<string | null> | null = null;
  const interrupt = () => {
    if (cancelling) {
      say(`left ${what} running: ${interruption.following}`);
      process.exit(130);
    }
    say(`cancelling ${what}… (Ctrl-C again leaves it running)`);
    cancelling = interruption.cancel().catch((error: unknown) => {
      say(`could not cancel it: ${messageOf(error)}`);
      return null;
    });
  };
  process.on('SIGINT', interrupt);
  try {
    return await saying(c, node, work);
  } catch (error) {
    // The cancel's answer, which may come after the failure it caused.
    const ended = await (cancelling as Promise<string | null> | null);
    if (ended === null || ended === undefined) throw error;
    say(ended);
    cliIo().setExitCode(130);
    return null;
  } finally {
    process.off('SIGINT', interrupt);
    // Once Ctrl-C was pressed the command is on its way out: another press must not kill it before it says how.
    if (cancelling) process.on('SIGINT', () => undefined);
  }
}
