// `npm test`: ESLint and tsc read the sources while the build runs, then the unit tests and the Playwright specs run
// one after the other (together they would slow each other's timed waits past their limits on two cores). Every part
// runs to its end; the run fails when any part failed, naming which.
import { spawn } from 'node:child_process';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** Runs `npm run SCRIPT`; resolves with its name when it failed, or null. */
function run(script) {
  return new Promise((resolve) => {
    const child = spawn(npm, ['run', '--silent', script], { stdio: 'inherit' });
    child.on('exit', (code) => resolve(code === 0 ? null : script));
  });
}

const checks = Promise.all([run('lint'), run('typecheck')]);
const failed = [await run('build')];
// The tests run the build: without one they say nothing.
if (!failed[0]) failed.push(await run('test:unit'), await run('test:e2e'));
failed.push(...(await checks));
if (failed.some(Boolean)) {
  console.error(`npm test: failed: ${failed.filter(Boolean).join(', ')}`);
  process.exit(1);
}
