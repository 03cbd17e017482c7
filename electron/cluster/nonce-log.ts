// The nonces of the calls a node acted on, kept on disk until their clock window ends: a call captured and played
// again after the node restarted is still one it already answered. One line per call ("EXPIRES NONCE"), appended
// before the call is acted on; the file is rewritten with only the live ones when it opens and when it has grown.
import { open, readFile, type FileHandle } from 'node:fs/promises';
import { writeFileAtomic } from '../core/state-file.ts';

/** The nonces a caller may send: what the file can hold on one line, and no more. */
export const NONCE = /^[A-Za-z0-9_-]{16,64}$/;

export class NonceLog {
  /** Nonce → when it expires; in time order, so the expired ones are at the front. */
  private readonly nonces = new Map<string, number>();
  private file: FileHandle | null = null;
  private lines = 0;

  constructor(private readonly path: string) {}

  async open(): Promise<void> {
    const text = await readFile(this.path, 'utf8').catch(() => '');
    const now = Date.now();
    for (const line of text.split('\n')) {
      const [expires, nonce = ''] = line.split(' ');
      if (Number(expires) > now && NONCE.test(nonce)) this.nonces.set(nonce, Number(expires));
    }
    await this.compact();
  }

  get size(): number {
    return this.nonces.size;
  }

  has(nonce: string): boolean {
    this.forgetExpired();
    return this.nonces.has(nonce);
  }

  /** Remembers a nonce until `expires`, on disk before this resolves. */
  async add(nonce: string, expires: number): Promise<void> {
    this.nonces.set(nonce, expires);
    if (this.lines > 2 * this.nonces.size + 1000) await this.compact();
    else await this.file?.appendFile(`${expires} ${nonce}\n`);
    this.lines++;
  }

  async close(): Promise<void> {
    await this.file?.close();
    this.file = null;
  }

  private forgetExpired(): void {
    const now = Date.now();
    for (const [nonce, expires] of this.nonces) {
      if (expires > now) break;
      this.nonces.delete(nonce);
    }
  }

  private async compact(): Promise<void> {
    this.forgetExpired();
    await this.file?.close();
    await writeFileAtomic(this.path, [...this.nonces].map(([nonce, expires]) => `${expires} ${nonce}\n`).join(''), { mode: 0o600 });
    this.file = await open(this.path, 'a', 0o600);
    this.lines = this.nonces.size;
  }
}
