// The `hangar` CLI: one command runs per process, and how it ends is its exit status and one line.
import { failureStatus, runCommand } from './run-command.ts';

// Output piped into `head` and the like: the reader is gone, so there is nothing left to say.
process.stdout.on('error', (error: NodeJS.ErrnoException) => process.exit(error.code === 'EPIPE' ? 0 : 1));

try {
  await runCommand(process.argv.slice(2));
} catch (error) {
  process.exit(failureStatus(error));
}
