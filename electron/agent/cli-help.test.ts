// Every command's --help, as a new user reads it: a default said once, and never as JavaScript ("false", "[]").
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';

const CLI = join(import.meta.dirname, '../../dist/agent/cli.js');
const run = promisify(execFile);
const helpOf = async (...command: string[]) => (await run(process.execPath, [CLI, ...command, '--help'])).stdout;

test('no option says its default twice, or as false or []', async () => {
  const commands = (await helpOf()).split('Commands:')[1]!.split('\n').map((line) => /^ {2}(\S+)/.exec(line)?.[1]).filter((name): name is string => Boolean(name) && name !== 'help');
  const groups = ['cluster', 'localai'];
  const subcommands = await Promise.all(groups.map(async (group) => (await helpOf(group)).split('Commands:')[1]!.split('\n').map((line) => /^ {2}(\S+)/.exec(line)?.[1]).filter((name): name is string => Boolean(name) && name !== 'help').map((name) => [group, name])));
  const all = [...commands.map((name) => [name]), ...subcommands.flat()];
  assert.ok(all.length > 40, `${all.length} commands`);
  const helps = await Promise.all(all.map(async (command) => ({ command, text: await helpOf(...command) })));
  for (const { command, text } of helps) {
    // Commander wraps a description over lines: the option's whole text is what is read.
    for (const line of text.replace(/\n {10,}/g, ' ').split('\n')) {
      assert.doesNotMatch(line, /\(default: (?:false|\[\])\)/, `hangar ${command.join(' ')} --help: ${line.trim()}`);
      assert.doesNotMatch(line, /default.*\(default:/, `hangar ${command.join(' ')} --help: ${line.trim()}`);
    }
  }
});
