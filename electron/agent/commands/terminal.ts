// What a command writes to stdout, and the question it asks before it stops something.
import { once } from 'node:events';
import { createInterface } from 'node:readline/promises';

export function print(options: { json?: boolean }, value: unknown, human: () => string): void {
  process.stdout.write(options.json ? JSON.stringify(value, null, 2) + '\n' : human());
}

/** Asks on the terminal (or reads one line from a piped stdin); only "y" or "yes" agrees. */
export async function confirm(question: string): Promise<boolean> {
  const prompt = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await Promise.race([prompt.question(question), once(prompt, 'close').then(() => '')]);
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    prompt.close();
  }
}
