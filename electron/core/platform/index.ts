// The platform layer this process uses: linux on Linux, posix elsewhere (macOS); HANGAR_PLATFORM=posix forces the
// POSIX one on Linux, which is how its Mac path is run and proven here.
import { linux } from './linux.ts';
import { posix } from './posix.ts';
import type { Platform, PlatformName } from './types.ts';

export type * from './types.ts';

export function platformNamed(name: PlatformName): Platform {
  return name === 'linux' ? linux : posix;
}

/** The layer for this OS and environment. */
export function currentPlatform(env: NodeJS.ProcessEnv = process.env): Platform {
  if (env.HANGAR_PLATFORM === 'posix' || process.platform !== 'linux') return posix;
  return linux;
}
