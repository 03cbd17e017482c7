// One `hangar` command, run to its end; what it failed with becomes one line on stderr and an exit status.
import { CommanderError } from 'commander';
import { HomeBusyError } from '../core/home-lock.ts';
import { cutText, messageOf } from '../../shared/error-text.ts';
import { cliIo } from './cli-io.ts';
import { forTerminal } from './commands/terminal.ts';
import { exitCodeOf } from './exit-codes.ts';
import { hangarProgram } from './program.ts';

/** A node's errors come cut to 300 characters; the CLI's own, which can echo an argument, to this. */
const ERROR_MAX = 2000;
const said = (error: unknown) => forTerminal(cutText(messageOf(error), ERROR_MAX));

/** Runs the command `args` names (the words after `hangar`); throws what it failed with. */
export async function runCommand(args: string[]): Promise<void> {
  await hangarProgram().parseAsync(args, { from: 'user' });
}

/** Says on stderr why a command failed, unless commander said it already; returns the exit status for it. */
export function failureStatus(error: unknown): number {
  const { stderr } = cliIo();
  if (error instanceof CommanderError) {
    if (error.exitCode !== 0 && error.code === 'hangar.usage') stderr.write(`hangar: ${said(error)}\n`);
    return error.exitCode === 0 ? 0 : 2;
  }
  // The home's holder names itself ("hangar (pid N) already serves this home at URL"): no second prefix.
  const prefix = error instanceof HomeBusyError ? '' : 'hangar: ';
  stderr.write(`${prefix}${said(error)}\n`);
  return exitCodeOf(error);
}
