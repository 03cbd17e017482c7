// The `hangar` CLI: its global options, then each group of commands; one command runs per process.
import { Command, CommanderError, Help, type Option } from 'commander';
import { HomeBusyError } from '../core/home-lock.ts';
import { registerAgentCommand } from './commands/agent.ts';
import { registerBackendCommands } from './commands/backends.ts';
import { registerClusterCommands } from './commands/cluster.ts';
import { createCliContext } from './commands/context.ts';
import { registerJobCommands } from './commands/jobs.ts';
import { registerLocalAiCommands } from './commands/localai.ts';
import { registerProcessCommands } from './commands/processes.ts';
import { registerSettingsCommands } from './commands/settings.ts';
import { messageOf } from '../../shared/error-text.ts';
import { exitCodeOf } from './exit-codes.ts';

const program = new Command('hangar')
  .description('Hangar: install, upgrade and supervise local AI inference backends')
  .option('--node <url>', 'agent to talk to (default: the agent running on --home)')
  .option('--token <token>', 'agent token (default: $HANGAR_TOKEN, then <home>/state/token)')
  .option('--home <dir>', 'Hangar home (default: $HANGAR_HOME or the platform data dir)')
  .enablePositionalOptions()
  .showHelpAfterError('(run hangar --help for usage)')
  // A flag's "(default: false)" and a repeatable option's "(default: [])" say nothing; where it matters, the
  // description says what holds without the option.
  .configureHelp({ optionDescription: (option: Option) => Help.prototype.optionDescription.call(new Help(), option).replace(/ \(default: (?:false|\[\])\)$/, '') })
  .exitOverride();

const context = createCliContext(program);
// Registered in the order `hangar --help` lists them.
registerAgentCommand(context);
registerClusterCommands(context);
registerBackendCommands(context);
registerProcessCommands(context);
registerSettingsCommands(context);
registerLocalAiCommands(context);
registerJobCommands(context);

// Output piped into `head` and the like: the reader is gone, so there is nothing left to say.
process.stdout.on('error', (error: NodeJS.ErrnoException) => process.exit(error.code === 'EPIPE' ? 0 : 1));

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    if (error.exitCode !== 0 && error.code === 'hangar.usage') process.stderr.write(`hangar: ${error.message}\n`);
    process.exit(error.exitCode === 0 ? 0 : 2);
  }
  // The home's holder names itself ("hangar (pid N) already serves this home at URL"): no second prefix.
  const prefix = error instanceof HomeBusyError ? '' : 'hangar: ';
  process.stderr.write(`${prefix}${messageOf(error)}\n`);
  process.exit(exitCodeOf(error));
}
