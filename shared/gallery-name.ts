/**
 * The name a gallery goes by when none is given: a URL's host and path; a file's name without its extension, or
 * its folder's name for an `index.yaml` (LocalAI's name for every gallery, so it tells none apart); as one slug.
 */
export function galleryNameFor(location: string): string {
  // A URL still being typed (`http://`) is not one yet: it is named as text until it parses.
  const url = /^https?:\/\//i.test(location) && URL.canParse(location) ? new URL(location) : null;
  if (url) return slug(`${url.host}${url.pathname.replace(/\.ya?ml$/i, '')}`);
  const parts = location.replace(/^file:\/\//i, '').split('/').filter(Boolean);
  const file = (parts.at(-1) ?? '').replace(/\.[^.]*$/, '');
  return slug(file.toLowerCase() === 'index' ? (parts.at(-2) ?? file) : file);
}

function slug(text: string): string {
  const cleaned = text.toLowerCase().replace(/[^a-z0-9._]+/g, '-').replace(/^[-._]+|-+$/g, '');
  return cleaned.slice(0, 64) || 'gallery';
}
