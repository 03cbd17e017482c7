// This machine as an OCI platform, and choosing its manifest out of an image index.

export interface Platform {
  os: string;
  architecture: string;
  variant?: string;
}

const ARCHITECTURES: Record<string, string> = {
  x64: 'amd64',
  ia32: '386',
  arm64: 'arm64',
  arm: 'arm',
  ppc64: 'ppc64le',
  s390x: 's390x',
  riscv64: 'riscv64',
  loong64: 'loong64',
  mips: 'mips',
  mipsel: 'mipsle',
};

const OPERATING_SYSTEMS: Record<string, string> = { win32: 'windows', sunos: 'solaris' };

/** The OCI platform Node runs on; arm64 prefers variant v8, 32-bit arm the variant it was built for. */
export function hostPlatform(): Platform {
  const architecture = ARCHITECTURES[process.arch] ?? process.arch;
  const os = OPERATING_SYSTEMS[process.platform] ?? process.platform;
  if (architecture === 'arm64') return { os, architecture, variant: 'v8' };
  if (architecture === 'arm') {
    const armVersion = (process.config.variables as Record<string, unknown>)['arm_version'];
    return { os, architecture, variant: `v${String(armVersion ?? '7')}` };
  }
  return { os, architecture };
}

export function formatPlatform(p: Platform): string {
  return `${p.os}/${p.architecture}${p.variant ? `/${p.variant}` : ''}`;
}

/**
 * Picks the entry for `want` out of index entries: same os and architecture, preferring the exact variant,
 * then one without a variant, then any variant. Returns null when none fits.
 */
export function selectPlatform<T extends { platform?: Platform }>(entries: readonly T[], want: Platform): T | null {
  const candidates = entries.filter((e) => e.platform?.os === want.os && e.platform.architecture === want.architecture);
  return (
    candidates.find((e) => e.platform?.variant === want.variant) ??
    candidates.find((e) => !e.platform?.variant) ??
    candidates[0] ??
    null
  );
}
