// LocalAI's releases as a local HTTP server (tests only), laid out as github.com serves them to LocalAI's launcher:
// `/mudler/LocalAI/releases/latest` redirects to `/mudler/LocalAI/releases/tag/vX.Y.Z`, and each release serves
// `local-ai-vX.Y.Z-<os>-<arch>` (here the stand-in binary, a Node script) and `LocalAI-vX.Y.Z-checksums.txt`
// (sha256sum lines). A release can be published with a wrong checksum, without its line, or without the file, and its
// binary held halfway (a download that stalls). HEAD answers as GET does, without the body.
import { createHash } from 'node:crypto';
import { build as esbuild } from 'esbuild';
import { once } from 'node:events';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import type { StandInBuild } from './standin-local-ai.ts';

const MAIN = resolve('electron/localai/testing/standin-local-ai.ts');

let bundled: Promise<string> | null = null;

/**
 * The stand-in with everything it imports in one CommonJS text, made once per process. Run through tsx instead, it
 * would start esbuild as a child of its own whenever tsx's cache is cold (a fresh clone): a process LocalAI's single
 * Go binary never has, counted among LocalAI's by the runner.
 */
function standInBundle(): Promise<string> {
  bundled ??= esbuild({ entryPoints: [MAIN], bundle: true, platform: 'node', target: 'node20', format: 'cjs', write: false, logLevel: 'warning' }).then(
    (result) => result.outputFiles[0]!.text,
  );
  return bundled;
}

/** Writes the stand-in `local-ai` binary of `build` at `path`: one self-contained script run by this Node. */
export async function writeStandInBinary(path: string, build: StandInBuild): Promise<void> {
  const script = [
    `#!${process.execPath}`,
    `// LocalAI stand-in ${build.version}`,
    await standInBundle(),
    `module.exports.runLocalAi(${JSON.stringify(build)}, process.argv.slice(2), process.env)`,
    `  .catch((error) => { process.stderr.write(String((error && error.stack) || error) + '\\n'); process.exit(1); });`,
    '',
  ].join('\n');
  await writeFile(path, script);
  await chmod(path, 0o755);
}

export type ChecksumKind = 'right' | 'wrong' | 'unlisted' | 'no-file';

interface Release {
  binary: Buffer;
  asset: string;
  checksum: ChecksumKind;
}

export class StandInReleases {
  private readonly releases = new Map<string, Release>();
  private server: Server | null = null;
  latest: string | null = null;
  /** Paths fetched (GET), in order. */
  readonly asked: string[] = [];
  /** Paths only looked at (HEAD), in order. */
  readonly probed: string[] = [];
  /** Releases whose binary stalls halfway until `letGo`, and the downloads stalled so far. */
  private readonly held = new Set<string>();
  private readonly stalled: Array<() => void> = [];

  constructor(
    private readonly dir: string,
    private readonly platform: string,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  /** Publishes the stand-in built as `build` (its version the tag); the latest unless said otherwise. */
  async publish(build: StandInBuild, checksum: ChecksumKind = 'right', latest = true): Promise<void> {
    const asset = `local-ai-${build.version}-${this.platform}`;
    const path = join(this.dir, asset);
    await writeStandInBinary(path, build);
    this.releases.set(build.version, { binary: await readFile(path), asset, checksum });
    if (latest) this.latest = build.version;
  }

  /** From now on, a download of `version`'s binary sends half of it, then nothing until `letGo`. */
  hold(version: string): void {
    this.held.add(version);
  }

  /** Downloads stalled so far (those still open). */
  stalledDownloads(): number {
    return this.stalled.length;
  }

  /** Sends the rest of every stalled download, and stalls no more. */
  letGo(): void {
    this.held.clear();
    for (const finish of this.stalled.splice(0)) finish();
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      (req.method === 'HEAD' ? this.probed : this.asked).push(path);
      const release = /\/download\/([^/]+)\/local-ai-/.exec(path)?.[1];
      const binary = release !== undefined && req.method === 'GET' && this.held.has(release) ? this.releases.get(release)?.binary : undefined;
      if (binary) {
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': binary.length });
        // Half rounded up: a progress in whole percents reads 50% whatever the binary's length (49% when it was odd).
        const half = Math.ceil(binary.length / 2);
        res.write(binary.subarray(0, half));
        const finish = () => res.end(binary.subarray(half));
        this.stalled.push(finish);
        res.once('close', () => {
          const at = this.stalled.indexOf(finish);
          if (at !== -1) this.stalled.splice(at, 1);
        });
        return;
      }
      const answer = this.answer(path);
      res.writeHead(answer.status, answer.headers ?? {});
      res.end(answer.body);
    });
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((done) => this.server?.close(done));
  }

  private answer(path: string): { status: number; headers?: Record<string, string>; body?: Buffer | string } {
    if (path === '/mudler/LocalAI/releases/latest') {
      return this.latest ? { status: 302, headers: { location: `/mudler/LocalAI/releases/tag/${this.latest}` } } : { status: 404, body: 'Not Found' };
    }
    const match = /^\/mudler\/LocalAI\/releases\/download\/([^/]+)\/([^/]+)$/.exec(path);
    const release = match && this.releases.get(match[1]!);
    if (!match || !release) return { status: 404, body: 'Not Found' };
    if (match[2] === release.asset) return { status: 200, headers: { 'content-type': 'application/octet-stream' }, body: release.binary };
    if (match[2] !== `LocalAI-${match[1]}-checksums.txt` || release.checksum === 'no-file') return { status: 404, body: 'Not Found' };
    const sha = createHash('sha256').update(release.binary).digest('hex');
    const other = `local-ai-${match[1]}-darwin-arm64`;
    const lines = {
      right: [`${createHash('sha256').update('another file').digest('hex')}  ${other}`, `${sha}  ${release.asset}`],
      wrong: [`${createHash('sha256').update('not it').digest('hex')}  ${release.asset}`],
      unlisted: [`${sha}  ${other}`],
    }[release.checksum];
    return { status: 200, headers: { 'content-type': 'text/plain' }, body: lines.join('\n') + '\n' };
  }
}
