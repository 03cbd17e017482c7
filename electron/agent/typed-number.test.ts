import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backendStartTimeoutPatch, settingPatch } from './settings-cli.ts';
import { cli } from './test-agent.ts';
import { typedNumber } from './typed-number.ts';

test('only decimal digits are a number: not hex, exponents, blanks or spaces, which Number() takes', () => {
  assert.equal(typedNumber('600'), 600);
  assert.equal(typedNumber('1.5', { fraction: true }), 1.5);
  for (const text of ['0x10', '1e3', '', ' 16', '16 ', '-5', '0b11', 'Infinity', '1.5']) assert.ok(Number.isNaN(typedNumber(text)), text);
});

test('a setting or an option given 0x10 is refused, not taken as 16', async () => {
  assert.deepEqual(settingPatch('start-timeout', '90'), { startTimeoutSec: 90 });
  assert.throws(() => settingPatch('start-timeout', '0x10'), /start-timeout wants a whole number, got "0x10"/);
  assert.throws(() => settingPatch('auto-upgrade-hours', '1e3'), /auto-upgrade-hours wants a whole number, got "1e3"/);
  assert.throws(() => backendStartTimeoutPatch({}, 'echo', '0x10'), /start-timeout wants a whole number, got "0x10"/);
  const agent = await cli('agent', '--home', '/nonexistent/hangar-typed-number', '--listen', '127.0.0.1:0', '--start-timeout', '0x10');
  assert.equal(agent.code, 2);
  assert.match(agent.stderr, /--start-timeout wants whole seconds from 10 to 86400, got "0x10"/);
});

test('an error that echoes a 100,000-digit argument is cut, and says by how much', async () => {
  const digits = '9'.repeat(100_000);
  const said = await cli('agent', '--home', '/nonexistent/hangar-typed-number', '--listen', '127.0.0.1:0', '--start-timeout', digits);
  assert.equal(said.code, 2);
  assert.match(said.stderr, /^hangar: --start-timeout wants whole seconds from 10 to 86400, got "9+… \(98\d{3} characters more\)\n$/);
  assert.ok(said.stderr.length < 2100, `${said.stderr.length} characters`);
});
