// The module hooks register.mjs installs (they run in Node's loader thread): a .ts or .tsx file loads as the ES module
// transform.mjs makes of it. Resolution is Node's own: the sources import with explicit extensions (NodeNext).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { transformed } from './transform.mjs';

export async function load(url, context, nextLoad) {
  if (!url.startsWith('file:') || !/\.tsx?$/.test(url)) return nextLoad(url, context);
  const path = fileURLToPath(url);
  return { format: 'module', source: await transformed(path, readFileSync(path, 'utf8')), shortCircuit: true };
}
