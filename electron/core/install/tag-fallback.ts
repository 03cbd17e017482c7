// LocalAI's last resort when an image's uri and mirrors all fail (core/gallery/backends.go InstallBackend): the
// branch build of a release tag (`latest-X` -> `master-X`), then its development build (`master-X-development`).

export function tagFallbacks(uri: string): string[] {
  const branch = uri.replace('latest-', 'master-');
  if (branch === uri) return [];
  return branch.includes('-development') ? [branch] : [branch, `${branch}-development`];
}
