import { Command, CommanderError } from 'commander';
import { LOCAL_NODE } from '../../shared/api.ts';
import type { JobView, LogLine } from '../../shared/types.ts';
import type { WireClient } from '../../shared/wire-client.ts';
import { connect } from './connect.ts';
import { galleryJson, jobLine, lsJson, psJson, scanJson, table, upgradeText, uptime } from './format.ts';
import { DEFAULT_LISTEN, homeDir } from './paths.ts';
import { runAgent } from './run-agent.ts';

const node = LOCAL_NODE;

interface GlobalOptions {
  node?: string;
  token?: string;
  home?: string;
}

const program = new Command('hangar')
  .description('Hangar: install, upgrade and supervise local AI inference backends')
  .option('--node <url>', 'agent to talk to (default: the agent running on --home)')
  .option('--token <token>', 'agent token (default: $HANGAR_TOKEN, then <home>/state/token)')
  .option('--home <dir>', 'Hangar home (default: $HANGAR_HOME or the platform data dir)')
  .enablePositionalOptions()
  .showHelpAfterError('(run hangar --help for usage)')
  .exitOverride();

program
  .command('agent')
  .description('run a node and serve it over HTTP + WebSocket (127.0.0.1 only unless --listen says otherwise)')
  .option('--home <dir>', 'Hangar home')
  .option('--gallery <pathOrUrl>', 'a backend gallery index.yaml, NAME=PATH_OR_URL to name it (repeatable; default: the starter gallery)', collect, [])
  .option('--listen <host:port>', 'address to bind; port 0 picks a free one', DEFAULT_LISTEN)
  .option('--token <token>', 'token clients must present, at least 16 characters (visible in the process list: prefer --token-file)')
  .option('--token-file <file>', 'read the token from a file (default: $HANGAR_TOKEN, then <home>/state/token, created on first run)')
  .option('--auto-upgrade', 'upgrade backends as soon as the gallery offers a newer version', false)
  .option('--ports <from-to>', 'port range for backends (default 30100-30999)')
  .option('--max-install-size <size>', 'what one backend may hold on disk, e.g. 64G (default 32G)')
  .option('--stall-timeout <seconds>', 'give up on a download that sends no headers, or under 1 KiB, for this long (default 30)')
  .action(async (options: { home?: string; gallery: string[]; listen: string; token?: string; tokenFile?: string; autoUpgrade: boolean; ports?: string; maxInstallSize?: string; stallTimeout?: string }) => {
    const home = homeDir(options.home ?? program.opts<GlobalOptions>().home);
    await runAgent({ ...options, home, galleries: options.gallery });
  });

client('gallery', 'list gallery entries', (c) => c.option('--refresh', 're-read galleries and registry digests'))
  .action(withClient(async (c, options: { json?: boolean; refresh?: boolean }) => {
    const entries = await c.gallery({ node, refresh: options.refresh === true });
    const { galleryProblems } = await c.info({ node });
    for (const problem of galleryProblems) process.stderr.write(`hangar: warning: ${problem.message}\n`);
    if (entries.length === 0 && galleryProblems.length > 0) process.exitCode = 1;
    print(options, entries.map(galleryJson), () =>
      table(entries.map((e) => ({
        name: e.name,
        gallery: e.gallery,
        version: e.version,
        status: e.upgradable ? 'upgradable' : e.installed ? 'installed' : e.compatible ? '' : 'incompatible',
        resolves: e.meta ? (e.meta.resolves ? `→ ${e.meta.resolves} (${e.meta.capability})` : 'no build for this machine') : '',
      })), 'the gallery is empty'),
    );
  }));

client('ls', 'list installed backends').action(withClient(async (c, options: { json?: boolean }) => {
  const backends = await c.backends({ node });
  print(options, backends.map(lsJson), () =>
    table(backends.map((b) => ({
      name: b.name,
      version: b.upgradable ? upgradeText(b.version, b.availableVersion) : b.version,
      processes: b.processes.map((p) => `${p.model}:${p.pid}${p.cwd === 'stale' ? ' (STALE CWD)' : ''}`).join(' ') || '-',
      status: b.broken ? `broken: ${b.broken}` : b.metaBackendFor ? `meta → ${b.metaBackendFor}` : 'ok',
    })), 'no backends installed (try: hangar gallery, then hangar install NAME)'),
  );
}));

client('install', 'install a backend from the gallery', (c) => c.argument('<name>', 'name or gallery@name').option('--force', 'reinstall when already installed'))
  .action(withClient((c, name: string, options: { json?: boolean; force?: boolean }) =>
    runJob(c, options, () => c.install({ node, name, force: options.force === true }))));

client('upgrade', 'upgrade a backend (or --all)', (c) => c.argument('[name]').option('--all', 'upgrade every upgradable backend'))
  .action(withClient(async (c, name: string | undefined, options: { json?: boolean; all?: boolean }) => {
    if (options.all) {
      const results = await c.upgradeAll({ node });
      print(options, results, () => table(results.map((r) => ({ backend: r.backend, result: r.ok ? 'upgraded' : r.error })), 'nothing to upgrade'));
      if (results.some((r) => !r.ok)) process.exitCode = 1;
      return;
    }
    if (!name) throw new CommanderError(2, 'hangar.usage', 'upgrade needs a NAME or --all');
    await runJob(c, options, () => c.upgrade({ node, name }));
  }));

client('rollback', 'swap back to the previous version', (c) => c.argument('<name>'))
  .action(withClient((c, name: string, options: { json?: boolean }) => runJob(c, options, () => c.rollback({ node, name }))));

client('delete', 'delete an installed backend', (c) => c.argument('<name>'))
  .action(withClient((c, name: string, options: { json?: boolean }) => runJob(c, options, () => c.delete({ node, name }))));

client('load', 'ensure a fresh process for MODEL on backend NAME and load it', (c) => c.argument('<name>').argument('<model>'))
  .action(withClient(async (c, backend: string, model: string, options: { json?: boolean }) => {
    const result = await c.load({ node, backend, model });
    print(options, result, () => `${result.message}\npid ${result.pid}, port ${result.port}${result.reused ? ' (reused)' : ''}\n`);
  }));

client('respawn', 'force a fresh process for MODEL (or every process of --backend NAME)', (c) => c.argument('[model]').option('--backend <name>'))
  .action(withClient(async (c, model: string | undefined, options: { json?: boolean; backend?: string }) => {
    if (options.backend) {
      const processes = await c.respawnBackend({ node, name: options.backend });
      return print(options, processes.map(psJson), () => processes.map((p) => `respawned ${p.model}: pid ${p.pid}\n`).join('') || 'no processes\n');
    }
    if (!model) throw new CommanderError(2, 'hangar.usage', 'respawn needs a MODEL or --backend NAME');
    const p = await c.respawn({ node, model });
    print(options, psJson(p), () => `respawned ${p.model}: pid ${p.pid}, port ${p.port}\n`);
  }));

client('stop', 'stop the process serving MODEL', (c) => c.argument('<model>'))
  .action(withClient(async (c, model: string, options: { json?: boolean }) => {
    await c.stop({ node, model });
    print(options, { stopped: model }, () => `stopped ${model}\n`);
  }));

client('ps', 'list backend processes with their cwd status').action(withClient(async (c, options: { json?: boolean }) => {
  const processes = await c.processes({ node });
  print(options, processes.map(psJson), () =>
    table(processes.map((p) => ({
      model: p.model, backend: p.backend, pid: p.pid, port: p.port, state: p.state, up: uptime(p.startedAt),
      cwd: p.cwd === 'stale' ? `STALE: ${p.cwdReason}` : p.cwd,
    })), 'no backend processes'),
  );
}));

client('scan', 'find every process whose cwd is or was inside the backends directory').action(withClient(async (c, options: { json?: boolean }) => {
  const found = await c.scan({ node });
  print(options, found.map(scanJson), () => table(found.map(scanJson), 'no process runs from the backends directory'));
}));

client('logs', 'print the recent output of MODEL', (c) => c.argument('<model>').option('-f, --follow', 'keep printing new lines'))
  .action(withClient(async (c, model: string, options: { json?: boolean; follow?: boolean }) => {
    const show = (line: LogLine) => process.stdout.write(options.json ? JSON.stringify(line) + '\n' : `${line.text}\n`);
    if (options.follow) c.onEvent((e) => e.type === 'log' && e.line.model === model && show(e.line));
    (await c.logs({ node, model })).forEach(show);
    if (options.follow) await c.closed;
  }));

function client(name: string, description: string, configure: (c: Command) => Command = (c) => c): Command {
  return configure(program.command(name).description(description)).option('--json', 'print JSON to stdout');
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** Wraps an action: connects first, always disconnects. */
function withClient<A extends unknown[]>(action: (c: WireClient, ...args: A) => Promise<void>) {
  return async (...args: A) => {
    const globals = program.opts<GlobalOptions>();
    const c = await connect({ node: globals.node, token: globals.token, home: homeDir(globals.home) });
    try {
      await action(c, ...args);
    } finally {
      c.close();
    }
  };
}

function print(options: { json?: boolean }, value: unknown, human: () => string): void {
  process.stdout.write(options.json ? JSON.stringify(value, null, 2) + '\n' : human());
}

/** Starts a job, shows its progress on stderr, and fails the command if the job fails. */
async function runJob(c: WireClient, options: { json?: boolean }, start: () => Promise<JobView>): Promise<void> {
  const seen = new Map<string, JobView>();
  let id: string | null = null;
  let last = '';
  const show = (job: JobView) => {
    const line = jobLine(job);
    if (line === last) return;
    last = line;
    process.stderr.write(process.stderr.isTTY ? `\r\x1b[K${line}` : `${line}\n`);
  };
  const off = c.onEvent((e) => {
    if (e.type !== 'job') return;
    if (id === null) seen.set(e.job.id, e.job);
    else if (e.job.id === id) show(e.job);
  });
  const job = await start();
  id = job.id;
  show(seen.get(id) ?? job);
  const final = await c.waitJob({ node, id });
  off();
  if (process.stderr.isTTY) process.stderr.write('\r\x1b[K');
  if (final.state !== 'done') throw new Error(final.error ?? `${final.kind} ${final.backend} ${final.state}`);
  print(options, final, () => `${final.kind} ${final.backend}: done\n`);
}

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    if (error.exitCode !== 0 && error.code === 'hangar.usage') process.stderr.write(`hangar: ${error.message}\n`);
    process.exit(error.exitCode === 0 ? 0 : 2);
  }
  process.stderr.write(`hangar: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
