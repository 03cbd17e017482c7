// Every writer of the state directory on a real full filesystem (a tmpfs filled to its last page): the old file stays
// whole, no temporary file is left, the failure names the file and the cause, and it is said once.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { CoalescedFile } from './coalesced-file.ts';
import { VariantChoices } from './gallery/variant-choices.ts';
import { removeInterruptedWrites, STATE_WARNING, writeFileAtomic } from './state-file.ts';
import { tempDir } from './testing/fixtures.ts';
import { tmpfsForTest, type Tmpfs } from './testing/tmpfs.ts';

/** A state directory on a 1 MiB tmpfs, or null where the test may not mount one. */
async function smallDisk(t: TestContext): Promise<{ dir: string; disk: Tmpfs } | null> {
  const mounted = await tmpfsForTest(t, '1m');
  if (!mounted) return null;
  const dir = join(mounted.dir, 'state');
  await mkdir(dir);
  return { dir, disk: mounted.disk };
}

const temps = async (dir: string) => (await readdir(dir)).filter((name) => name.endsWith('.tmp'));

describe('state files on a full disk', () => {
  test('a write that does not fit leaves the old file whole and no temporary file, and says which file and why', async (t) => {
    const setup = await smallDisk(t);
    if (!setup) return;
    const file = join(setup.dir, 'token');
    await writeFileAtomic(file, 'old\n');
    await setup.disk.fill();
    await assert.rejects(writeFileAtomic(file, 'new\n'), { name: 'StateWriteError', message: `cannot write ${file}: no space left on device` });
    assert.equal(await readFile(file, 'utf8'), 'old\n');
    assert.deepEqual(await temps(setup.dir), []);
  });

  test('a coalesced file (process table, job history) says a failed write once, and writes whole again once there is room', async (t) => {
    const setup = await smallDisk(t);
    if (!setup) return;
    const warnings: string[] = [];
    const listen = (warning: Error) => warning.name === STATE_WARNING && warnings.push(warning.message);
    process.on('warning', listen);
    t.after(() => process.off('warning', listen));
    const file = new CoalescedFile<{ n: number }>(join(setup.dir, 'processes.json'));
    file.save({ n: 1 });
    await file.flush();
    await setup.disk.fill();
    for (let n = 2; n <= 5; n++) {
      file.save({ n });
      await assert.rejects(file.flush(), /no space left on device/);
    }
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(warnings.length, 1, warnings.join('\n'));
    assert.match(warnings[0]!, /^cannot write \S+processes\.json: no space left on device/);
    assert.deepEqual(await file.read(), { n: 1 }, 'the last whole file');
    assert.deepEqual(await temps(setup.dir), []);

    await setup.disk.free();
    file.save({ n: 6 });
    await file.flush();
    assert.deepEqual(await file.read(), { n: 6 });
  });

  test('a build pick that does not fit is refused and not kept', async (t) => {
    const setup = await smallDisk(t);
    if (!setup) return;
    const choices = new VariantChoices(join(setup.dir, 'variants.json'));
    await choices.set('llama-cpp', 'cpu');
    await setup.disk.fill();
    await assert.rejects(choices.set('llama-cpp', 'vulkan'), /^HangarError: the build of llama-cpp was not changed: cannot write \S+variants\.json: no space left on device$/);
    assert.equal(await choices.get('llama-cpp'), 'cpu');
    assert.deepEqual(await temps(setup.dir), []);
  });
});

test('the temporary files interrupted writes left are removed, and said; one a running process writes is left', async (t) => {
  const dir = await tempDir('leftovers');
  t.after(() => rm(dir, { recursive: true, force: true }));
  const gone = spawnSync('true').pid!;
  const writing = `cluster-trust.${process.pid}.tmp`;
  await writeFile(join(dir, 'settings.json'), '{}');
  for (const name of [`settings.json.${gone}.1.tmp`, `jobs.json.${gone}.2.tmp`, 'rollouts.json.tmp', writing]) await writeFile(join(dir, name), '');
  assert.deepEqual(await removeInterruptedWrites(dir), [`removed 3 temporary files that interrupted writes left in ${dir}`]);
  assert.deepEqual((await readdir(dir)).sort(), [writing, 'settings.json']);
  assert.deepEqual(await removeInterruptedWrites(dir), []);
});
