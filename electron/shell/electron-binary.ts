// Where the `electron` package's binary is, found the way its index.js finds it but without its side effect:
// requiring 'electron' from Node tries to download a missing binary, which cannot work offline.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** `expected` is where the binary should have been, when that is known. */
export type ElectronBinary = { path: string } | { missing: string; expected?: string };

export function findElectronBinary(from: string = import.meta.url): ElectronBinary {
  let packageDir: string;
  try {
    packageDir = dirname(createRequire(from).resolve('electron/package.json'));
  } catch {
    return { missing: 'the electron package is not installed' };
  }
  let executable: string | undefined;
  try {
    executable = readFileSync(join(packageDir, 'path.txt'), 'utf8').trim() || undefined;
  } catch {
    executable = undefined;
  }
  const override = process.env.ELECTRON_OVERRIDE_DIST_PATH;
  if (!override && !executable) {
    return { missing: `the electron package has no binary (no ${join(packageDir, 'path.txt')}; its install script did not run; \`npm install-scripts approve electron && npm rebuild electron\` fetches it)` };
  }
  const path = override ? join(override, executable ?? 'electron') : join(packageDir, 'dist', executable!);
  return existsSync(path) ? { path } : { missing: `the Electron binary ${path} does not exist`, expected: path };
}
