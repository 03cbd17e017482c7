// Child for the permission test (run as an unprivileged user): installs "demo" from a uri, prints the error line.
// argv: <backendsDir> <uri>
import { installBackend } from '../install.ts';
import { builtinSources } from '../builtin-sources.ts';
import { BackendStore } from '../store.ts';

const [backendsDir, uri] = process.argv.slice(2) as [string, string];
try {
  await installBackend(new BackendStore(backendsDir), { name: 'demo', uris: [uri], factories: builtinSources, sourceOptions: { baseDir: null, baseUrl: null } });
  console.log('installed');
} catch (err) {
  console.log(err instanceof Error ? err.message : String(err));
}
