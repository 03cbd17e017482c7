// A setting that holds secrets, fixed by the command line for a run, else kept where the host keeps it and changed
// from a view that never sees the secrets. The cluster a host joins, the LocalAI cluster it manages and the LocalAI
// server beside its node are each one.
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { ZodType } from 'zod';
import { HangarError } from '../../shared/errors.ts';
import { withSecretsKept } from './secrets.ts';
import { readJsonFile, writeFileAtomic } from './state-file.ts';

/** Where a setting is kept between runs. */
export interface SettingPlace<T> {
  read(): Promise<T | null>;
  write(value: T | null): Promise<void>;
}

/** A JSON file of its own, the owner's alone (it holds secrets), written whole; a file that does not fit reads as none. */
export function ownerFile<T>(path: string, schema: ZodType<T>): SettingPlace<T> {
  return {
    read: async () => schema.safeParse(await readJsonFile(path)).data ?? null,
    write: async (value) => {
      await mkdir(dirname(path), { recursive: true }).catch(() => undefined);
      await writeFileAtomic(path, JSON.stringify(value, null, 2) + '\n', { mode: 0o600 });
    },
  };
}

export interface KeptSettingOptions<T> {
  place: SettingPlace<T>;
  /** Set on the command line: this value (none included) for the whole run, and why it cannot be changed. */
  fixed?: { value: T | null; reason: string } | null | undefined;
  /** The fields a change may leave out to keep the ones kept. */
  secrets: readonly (keyof T)[];
  /** Whether the kept secrets may go with `next` (default: always); a setting for another server is given its own. */
  keepsSecrets?: (next: T, kept: T) => boolean;
}

export class KeptSetting<T extends object> {
  private current: T | null = null;

  constructor(private readonly options: KeptSettingOptions<T>) {
    this.current = options.fixed?.value ?? null;
  }

  /** Why the setting cannot be changed, or null. */
  get fixedReason(): string | null {
    return this.options.fixed?.reason ?? null;
  }

  async load(): Promise<T | null> {
    if (!this.options.fixed) this.current = await this.options.place.read();
    return this.current;
  }

  get(): T | null {
    return this.current;
  }

  /** Keeps `next`, written before it is used: a change that cannot be written is refused and nothing changes. */
  async save(next: T | null): Promise<T | null> {
    const { fixed, secrets, keepsSecrets } = this.options;
    if (fixed) throw new HangarError('conflict', fixed.reason);
    const kept = next && this.current && (keepsSecrets?.(next, this.current) ?? true) ? this.current : null;
    const merged = next && withSecretsKept(next, kept, secrets);
    await this.options.place.write(merged).catch((error: Error) => {
      throw new HangarError('failed', error.message);
    });
    this.current = merged;
    return merged;
  }
}
