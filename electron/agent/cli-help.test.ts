// Every command's --help, as a new user reads it: a default said once, and never as JavaScript ("false", "[]"). The
// help is the program's own text, read here from the program the CLI runs rather than by starting it once a command.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import type { Command } from 'commander';
import { hangarProgram } from './program.ts';

/** Each command under `command`, at any depth, with the words that name it. */
function* commands(command: Command, path: string[] = []): Generator<{ path: string[]; command: Command }> {
  for (const sub of command.commands) {
    yield { path: [...path, sub.name()], command: sub };
    yield* commands(sub, [...path, sub.name()]);
  }
}

test('no option says its default twice, or as false or []', () => {
  const program = hangarProgram();
  const all = [{ path: [], command: program }, ...commands(program)];
  assert.ok(all.length > 40, `${all.length} commands`);
  for (const { path, command } of all) {
    // Commander wraps a description over lines: the option's whole text is what is read.
    for (const line of command.helpInformation().replace(/\n {10,}/g, ' ').split('\n')) {
      assert.doesNotMatch(line, /\(default: (?:false|\[\])\)/, `hangar ${path.join(' ')} --help: ${line.trim()}`);
      assert.doesNotMatch(line, /default.*\(default:/, `hangar ${path.join(' ')} --help: ${line.trim()}`);
    }
  }
});

test('the built CLI prints that help', async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [join(import.meta.dirname, '../../dist/agent/cli.js'), 'localai', 'logs', '--help']);
  assert.equal(stdout, hangarProgram().commands.find((c) => c.name() === 'localai')!.commands.find((c) => c.name() === 'logs')!.helpInformation());
});
