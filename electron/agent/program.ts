// The `hangar` program: its global options, then each group of commands, in the order `hangar --help` lists them.
import { Command, Help, type Option } from 'commander';
import { cliIo } from './cli-io.ts';
import { registerAgentCommand } from './commands/agent.ts';
import { registerBackendCommands } from './commands/backends.ts';
import { registerClusterCommands } from './commands/cluster.ts';
import { createCliContext } from './commands/context.ts';
import { registerJobCommands } from './commands/jobs.ts';
import { registerLocalAiCommands } from './commands/localai.ts';
import { registerProcessCommands } from './commands/processes.ts';
import { registerSettingsCommands } from './commands/settings.ts';

export function hangarProgram(): Command {
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
    .configureOutput({ writeOut: (text) => cliIo().stdout.write(text), writeErr: (text) => cliIo().stderr.write(text) })
    .exitOverride();

  const context = createCliContext(program);
  registerAgentCommand(context);
  registerClusterCommands(context);
  registerBackendCommands(context);
  registerProcessCommands(context);
  registerSettingsCommands(context);
  registerLocalAiCommands(context);
  registerJobCommands(context);
  return program;
}
