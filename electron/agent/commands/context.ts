// What the `hangar` command groups share: the program and its global options, the node (or nodes) `--on` chose for
// the one command this process runs, and how a command that talks to an agent is declared and run.
import { type Command, CommanderError } from 'commander';
import { LOCAL_NODE } from '../../../shared/api.ts';
import type { WireClient } from '../../../shared/wire-client.ts';
import { connect } from '../connect.ts';
import { namesASet, resolveNode, resolveTargets, type Target } from '../nodes.ts';
import { homeDir } from '../paths.ts';

export interface GlobalOptions {
  node?: string;
  token?: string;
  home?: string;
}

interface ClientCommandOptions {
  /** Its `--on` may name a set of nodes. */
  sets?: boolean;
  parent?: Command;
  onDefault?: string;
}

export interface CliContext {
  readonly program: Command;
  /** The node the running command acts on, from `--on` (one command per process). */
  node: string;
  /** The nodes it acts on when `--on` names a set (`all`, or a comma list); null for one node. */
  targets: Target[] | null;
  globals(): GlobalOptions;
  /** Declares a command that talks to an agent: it takes `--on` and `--json`. */
  clientCommand(name: string, description: string, configure?: (c: Command) => Command, options?: ClientCommandOptions): Command;
  /** Wraps an action: connects first, resolves `--on`, always disconnects. */
  withClient<A extends unknown[]>(action: (c: WireClient, ...args: A) => Promise<void>): (...args: A) => Promise<void>;
}

export function createCliContext(program: Command): CliContext {
  /** Commands whose `--on` may name a set of nodes. */
  const acceptsSets = new Set<string>();
  const context: CliContext = {
    program,
    node: LOCAL_NODE,
    targets: null,
    globals: () => program.opts<GlobalOptions>(),
    clientCommand(name, description, configure = (c) => c, options = {}) {
      if (options.sets) acceptsSets.add(name);
      return configure((options.parent ?? program).command(name).description(description))
        .option('--on <node>', `the node to act on: a name or id from \`hangar nodes\`${options.sets ? ', all, or A,B' : ''} (default: ${options.onDefault ?? "this host's node"})`, parseOn)
        .option('--json', 'print JSON to stdout');
    },
    withClient<A extends unknown[]>(action: (c: WireClient, ...args: A) => Promise<void>) {
      return async (...args: A) => {
        const globals = context.globals();
        const command = args.at(-1) as Command;
        const on = command.opts<{ on?: string }>().on;
        if (namesASet(on) && !acceptsSets.has(command.name())) throw new CommanderError(2, 'hangar.usage', `${command.name()} acts on one node: --on ${on} is not for it`);
        const c = await connect({ node: globals.node, token: globals.token, home: homeDir(globals.home) });
        try {
          if (namesASet(on)) context.targets = await resolveTargets(c, on);
          else context.node = await resolveNode(c, on);
          await action(c, ...args);
        } finally {
          c.close();
        }
      };
    },
  };
  return context;
}

/** An empty --on, or an empty name in a list, is typed wrong: no node is named "". */
function parseOn(value: string): string {
  if (value.split(',').some((part) => part.trim() === '')) throw new CommanderError(2, 'hangar.usage', `--on wants a node's name or id (hangar nodes), all, A,B or label:KEY=VALUE, got "${value}"`);
  return value;
}

/** A repeatable option's values, in the order given. */
export function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}
