// Builds everything into dist/: the Electron main + preload, the agent/CLI, the starter backends
// (self-contained: no node_modules beside them) and the renderer.
import { build } from 'esbuild';
import { cpSync, mkdirSync, readdirSync, rmSync, statSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { build as viteBuild } from 'vite';

const dist = 'dist';
rmSync(dist, { recursive: true, force: true });

const node = { platform: 'node', target: 'node20', bundle: true, sourcemap: true, logLevel: 'warning' };
// The agent and the CLI bundle their packages: loaded from node_modules, each is files to resolve and compile (execa
// alone is a hundred), which slowed every start. gRPC stays out: a bundled CommonJS package imported lazily loses its
// named exports, and it loads once, on an idle turn. ws's optional native helpers stay out.
const agentExternal = ['@grpc/grpc-js', 'bufferutil', 'utf-8-validate'];

await Promise.all([
  build({ ...node, entryPoints: ['electron/main.ts'], outfile: `${dist}/electron/main.cjs`, format: 'cjs', packages: 'external',
    // What finds a file beside its bundle by import.meta.url (the gallery parse worker) finds it beside main.cjs.
    define: { 'import.meta.url': 'hangarImportMetaUrl' },
    banner: { js: "const hangarImportMetaUrl = require('node:url').pathToFileURL(__filename).href;" } }),
  // A sandboxed preload cannot require node_modules: bundle all of it.
  build({ ...node, entryPoints: ['electron/preload.ts'], outfile: `${dist}/electron/preload.cjs`, format: 'cjs', external: ['electron'] }),
  // Split so what the agent imports lazily (gRPC, the backend protocol) stays out of an idle agent's memory.
  build({ ...node, entryPoints: ['electron/agent/cli.ts'], outdir: `${dist}/agent`, format: 'esm', splitting: true, external: agentExternal,
    // Bundled CommonJS requires Node's built-ins by name; an ES module has no `require` of its own.
    banner: { js: "import { createRequire as hangarCreateRequire } from 'node:module'; const require = hangarCreateRequire(import.meta.url);" } }),
  // The thread a large gallery is parsed in (electron/core/gallery/index-parser.ts), beside each bundle that starts it;
  // self-contained, so a worker in the app's main process reads no more than this file from app.asar.
  ...['agent', 'electron'].map((bundle) =>
    build({ ...node, entryPoints: ['electron/core/gallery/parse-worker.ts'], outfile: `${dist}/${bundle}/gallery-parse-worker.cjs`, format: 'cjs' })),
  ...starterBackends(),
]);

await viteBuild({ configFile: 'renderer/vite.config.ts', logLevel: 'warn' });

/** Each backends/<name>/ is copied (minus TypeScript sources); its server.ts is bundled to server.cjs. */
function starterBackends() {
  const out = `${dist}/backends`;
  mkdirSync(out, { recursive: true });
  cpSync('backends/index.yaml', `${out}/index.yaml`);
  const jobs = [];
  for (const name of readdirSync('backends')) {
    const src = join('backends', name);
    if (!statSync(src).isDirectory() || !existsSync(join(src, 'run.sh'))) continue;
    cpSync(src, join(out, name), { recursive: true, filter: (f) => !f.endsWith('.ts') });
    if (existsSync(join(src, 'server.ts'))) {
      jobs.push(build({ ...node, entryPoints: [join(src, 'server.ts')], outfile: join(out, name, 'server.cjs'), format: 'cjs', sourcemap: false }));
    }
  }
  return jobs;
}
