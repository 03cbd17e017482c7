/** A gallery name from its location: the last part of its path (an index.yaml's folder), as a slug. */
export function galleryNameFor(location: string): string {
  const path = location.replace(/^[a-z]+:\/\//i, '').replace(/\/index\.ya?ml$|\.ya?ml$/i, '');
  const last = path.split('/').filter(Boolean).at(-1) ?? '';
  return last.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[^A-Za-z0-9]+/, '').slice(0, 64) || 'gallery';
}
