// What a command writes to stdout, and the question it asks before it stops something.
import { once } from 'node:events';
import { createInterface } from 'node:readline/promises';
import { cliIo } from '../cli-io.ts';

export function print(options: { json?: boolean }, value: unknown, human: () => string): void {
  cliIo().stdout.write(options.json ? JSON.stringify(value, null, 2) + '\n' : forTerminal(human()));
}

/** C0 controls but tab and newline, DEL and C1: what lets text move the cursor, retitle the window or set the clipboard. */
const CONTROL = /(?![\t\n])\p{Cc}/gu;

/**
 * Text for a terminal, its control characters shown as \u001b and the like: what a command prints comes in part from
 * galleries, archives, servers and other nodes, whose text must not drive the terminal it is read on.
 */
export function forTerminal(text: string): string {
  return text.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** All of stdin, trimmed: how a secret reaches a command without going on its command line. */
export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of cliIo().stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString().trim();
}

/** Asks on the terminal (or reads one line from a piped stdin); only "y" or "yes" agrees. */
export async function confirm(question: string): Promise<boolean> {
  const prompt = createInterface({ input: cliIo().stdin, output: cliIo().stderr });
  try {
    const answer = await Promise.race([prompt.question(question), once(prompt, 'close').then(() => '')]);
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    prompt.close();
  }
}
