import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveLinkLexically, safeEntryPath } from './paths.ts';

describe('entry names are kept as written, or refused with a reason', () => {
  it('keeps a backslash and a colon on Linux and macOS: they are ordinary name characters there', () => {
    assert.equal(safeEntryPath('back\\slash.txt', 'posix'), 'back\\slash.txt');
    assert.equal(safeEntryPath('c:weird.txt', 'posix'), 'c:weird.txt');
    assert.equal(safeEntryPath('./dir\\sub/c:x', 'posix'), 'dir\\sub/c:x');
    assert.equal(safeEntryPath('..\\..\\etc\\passwd', 'posix'), '..\\..\\etc\\passwd', 'one name in the root, not a climb');
    assert.equal(resolveLinkLexically('bin/l', '..\\x', 'posix'), 'bin/..\\x');
  });

  it('still refuses absolute names and ".." on Linux', () => {
    assert.throws(() => safeEntryPath('/etc/passwd', 'posix'), /entry "\/etc\/passwd" has an absolute path/);
    assert.throws(() => safeEntryPath('a/../../x', 'posix'), /climbs out of the tree with "\.\."/);
    assert.equal(resolveLinkLexically('l', '../x', 'posix'), null);
  });

  it('refuses on Windows what a Windows name cannot hold, naming the character, and never rewrites it', () => {
    assert.throws(() => safeEntryPath('back\\slash.txt', 'windows'), /entry "back\\slash\.txt" holds "\\\\", which a Windows file name cannot hold/);
    assert.throws(() => safeEntryPath('c:weird.txt', 'windows'), /entry "c:weird\.txt" holds ":", which a Windows file name cannot hold/);
    assert.throws(() => safeEntryPath('a\u0002b', 'windows'), /holds "\\u0002"/);
    assert.equal(safeEntryPath('ok/données/数据.txt', 'windows'), 'ok/données/数据.txt');
    assert.equal(resolveLinkLexically('bin/l', '..\\..\\x', 'windows'), null, 'a backslash separates in a Windows link target');
  });
});
