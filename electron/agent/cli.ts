// The `hangar` CLI: one command runs per process, and how it ends is its exit status and one line.
import { CommanderError } from 'commander';
import { HomeBusyError } from '../core/home-lock.ts';
import { forTerminal } from './commands/terminal.ts';
import { cutText, messageOf } from '../../shared/error-text.ts';
import { exitCodeOf } from './exit-codes.ts';
import { hangarProgram } from './program.ts';

const program = hangarProgram();
/** A node's errors come cut to 300 characters; the CLI's own, which can echo an argument, to this. */
const ERROR_MAX = 2000;
const said = (error: unknown) => forTerminal(cutText(messageOf(error), ERROR_MAX));

// Output piped into `head` and the like: the reader is gone, so there is nothing left to say.
process.stdout.on('error', (error: NodeJS.ErrnoException) => process.exit(error.code === 'EPIPE' ? 0 : 1));

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    if (error.exitCode !== 0 && error.code === 'hangar.usage') process.stderr.write(`hangar: ${said(error)}\n`);
    process.exit(error.exitCode === 0 ? 0 : 2);
  }
  // The home's holder names itself ("hangar (pid N) already serves this home at URL"): no second prefix.
  const prefix = error instanceof HomeBusyError ? '' : 'hangar: ';
  process.stderr.write(`${prefix}${said(error)}\n`);
  process.exit(exitCodeOf(error));
}
