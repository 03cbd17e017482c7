// Test helpers: big file contents made cheaply as streams (never held whole), and .tar.gz archives of real trees.
// Content is built from one 1 MiB block of crypto-random bytes, stamped with a counter per MiB: past gzip's 32 KiB
// window the repeats cannot be found, so it compresses exactly as its block does.
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { constants, createGzip } from 'node:zlib';

export const MiB = 1024 * 1024;

/** `bytes` of `block`, repeated with a counter in its first bytes so no two MiB are the same. */
function repeated(block: Buffer, bytes: number): Readable {
  return Readable.from(
    (function* () {
      for (let offset = 0, counter = 0; offset < bytes; offset += block.length, counter++) {
        const chunk = Buffer.from(block.subarray(0, Math.min(block.length, bytes - offset)));
        if (chunk.length >= 8) chunk.writeBigUInt64LE(BigInt(counter), 0);
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
  return repeated(Buffer.alloc(MiB), bytes);
}

export async function writeStream(path: string, content: Readable): Promise<void> {
  await pipeline(content, createWriteStream(path));
}

/** Streams `input` into `path` gzipped (RLE: as fast as gzip gets, and a true gzip stream), hashing the result. */
async function gzipInto(input: Readable, path: string): Promise<{ sha256: string; bytes: number }> {
  const hash = createHash('sha256');
  let bytes = 0;
  const tap = new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      hash.update(chunk);
      bytes += chunk.length;
      callback(null, chunk);
    },
  });
  await pipeline(input, createGzip({ strategy: constants.Z_RLE }), tap, createWriteStream(path));
  return { sha256: hash.digest('hex'), bytes };
}

export interface Archive {
  path: string;
  sha256: string;
  bytes: number;
}

/** `tree` as GNU tar writes it (names sorted, hardlinks as tar records them), gzipped into `path`. */
export async function tarGzOf(tree: string, path: string): Promise<Archive> {
  const tar = spawn('tar', ['--sort=name', '-C', tree, '-cf', '-', '.'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  tar.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => tar.once('exit', resolve));
  const gz = await gzipInto(tar.stdout, path);
  const code = await exited;
  if (code !== 0) throw new Error(`tar failed (${code}): ${stderr}`);
  return { path, ...gz };
}
