// lsof's field output (`-F`), the one way both Linux and macOS show another process's cwd by identity. Each line is
// one field: a letter, then its value; `p` starts a process, the file fields that follow are its cwd's.
//   D  the device, in hex as lsof prints it (`0xfe00`): st_dev, the same number stat() gives for that directory
//   i  the inode, decimal
//   k  the link count (with +L): 0 once the directory was removed
//   n  the name; Linux's lsof adds " (deleted)" to a removed one
import { run } from './ps.ts';
import type { ProcessCwd } from './types.ts';

const DELETED = ' (deleted)';

/** The cwd of each of `pids` (every process when omitted), from one lsof. */
export async function lsofCwds(pids?: number[]): Promise<Map<number, ProcessCwd>> {
  if (pids && pids.length === 0) return new Map();
  const select = pids ? ['-p', pids.join(',')] : [];
  return parseLsofCwds(await run('lsof', ['-w', '+L', '-a', '-d', 'cwd', '-F', 'pDikn', ...select]));
}

export function parseLsofCwds(text: string): Map<number, ProcessCwd> {
  const cwds = new Map<number, ProcessCwd>();
  let pid = 0;
  let fields: Record<string, string> = {};
  const finish = () => {
    const name = fields.n;
    // A cwd lsof could not read comes as a name with a reason and no device: nothing is known of it.
    if (pid > 0 && name !== undefined && fields.D !== undefined && fields.i !== undefined) {
      const deleted = name.endsWith(DELETED) || fields.k === '0';
      cwds.set(pid, { path: name.endsWith(DELETED) ? name.slice(0, -DELETED.length) : name, dev: BigInt(fields.D), ino: BigInt(fields.i), deleted });
    }
    fields = {};
  };
  for (const line of text.split('\n')) {
    const [key, value] = [line[0], line.slice(1)];
    if (key === 'p') {
      finish();
      pid = Number(value);
    } else if (key === 'f') {
      finish();
    } else if (key) {
      fields[key] = value;
    }
  }
  finish();
  return cwds;
}

/** The pid listening on TCP `port` (any address), or null. */
export async function lsofListener(port: number): Promise<number | null> {
  const text = await run('lsof', ['-w', '-nP', `-iTCP:${port}`, '-sTCP:LISTEN', '-F', 'p']);
  const line = text.split('\n').find((l) => l.startsWith('p'));
  return line ? Number(line.slice(1)) : null;
}
