// Test helpers: big file contents made cheaply as streams (never held whole), and .tar.gz archives of real trees.
// Content is built from one 1 MiB block of crypto-random bytes, stamped with a counter per MiB: past gzip's 32 KiB
// window the repeats cannot be found, so it compresses exactly as its block does.
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { buildLayer, layerOf, type Blob, type LayerEntry } from '../oci/testing/image.ts';

export const MiB = 1024 * 1024;

/** `bytes` of `block`, repeated; a counter in the first bytes of each copy makes every MiB differ when `stamp`. */
function repeated(block: Buffer, bytes: number, stamp = true): Readable {
  return Readable.from(
    (function* () {
      for (let offset = 0, counter = 0; offset < bytes; offset += block.length, counter++) {
        const chunk = Buffer.from(block.subarray(0, Math.min(block.length, bytes - offset)));
        if (stamp && chunk.length >= 8) chunk.writeBigUInt64LE(BigInt(counter), 0);
        yield chunk;
      }
    })(),
    { objectMode: false },
  );
}

/** Random bytes: gzip cannot shrink them. */
export function incompressible(bytes: number): Readable {
  return repeated(randomBytes(MiB), bytes);
}

/** Bytes drawn at random from six letters: gzip shrinks them about 3x, as it does a large shared library. */
export function compressesThreeTimes(bytes: number): Readable {
  const block = randomBytes(MiB);
  for (let i = 0; i < block.length; i++) block[i] = 0x61 + (block[i]! % 6);
  return repeated(block, bytes);
}

export function zeros(bytes: number): Readable {
  return repeated(Buffer.alloc(MiB), bytes, false);
}

export async function writeStream(path: string, content: Readable): Promise<void> {
  await pipeline(content, createWriteStream(path));
}

/** A layer entry of `size` bytes made by `make`, whose sha256 is known once its content has been read through. */
export function generated(path: string, size: number, make: (bytes: number) => Readable): LayerEntry & { sha256(): string } {
  let digest: string | null = null;
  return {
    path,
    size,
    content() {
      const hash = createHash('sha256');
      const tap = new Transform({
        transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
          hash.update(chunk);
          callback(null, chunk);
        },
        flush(callback: TransformCallback) {
          digest = hash.digest('hex');
          callback();
        },
      });
      return make(size).pipe(tap);
    },
    sha256() {
      if (digest === null) throw new Error(`${path} was never read through`);
      return digest;
    },
  };
}

export async function sha256OfFile(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path, { highWaterMark: MiB })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** A gzipped archive in a file, as an OCI layer describes it (the .tar.gz file, its digest and size). */
export type ArchiveFile = Blob & { data: { path: string } };

function inFile(blob: Blob): ArchiveFile {
  if (Buffer.isBuffer(blob.data)) throw new Error('expected a layer written to a file');
  return blob as ArchiveFile;
}

/** `tree` as GNU tar writes it (hardlinks as tar records them), its top-level `names` in this order, gzipped. */
export async function tarGzOf(tree: string, names: string[], path: string): Promise<ArchiveFile> {
  const tar = spawn('tar', ['--sort=name', '-C', tree, '-cf', '-', '--', ...names], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  tar.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => tar.once('exit', resolve));
  const archive = await layerOf(tar.stdout, { file: path, fast: true });
  const code = await exited;
  if (code !== 0) throw new Error(`tar failed (${code}): ${stderr}`);
  return inFile(archive);
}

/** A .tar.gz of `files`, in this order, then a run.sh: written straight from their streams. */
export async function tarGzOfStreams(files: LayerEntry[], path: string): Promise<ArchiveFile> {
  const runSh: LayerEntry = { path: 'run.sh', content: '#!/bin/sh\n', mode: 0o755 };
  return inFile(await buildLayer([...files, runSh], { file: path, fast: true }));
}
