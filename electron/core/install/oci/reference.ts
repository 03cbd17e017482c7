// OCI image references as a gallery writes them: `quay.io/org/repo:tag`, `oci://host/repo:tag`,
// Docker Hub short names (`org/repo:tag`, `name:tag`) and digest pins (`name@sha256:...`).
import { HangarError } from '../../../../shared/errors.ts';

export interface ImageReference {
  /** Registry as named in references: `docker.io`, `quay.io`, `127.0.0.1:5000`. */
  registry: string;
  /** Repository path inside the registry, e.g. `library/alpine`. */
  repository: string;
  tag: string | null;
  digest: string | null;
}

const DOCKER_HUB = 'docker.io';
const OCI_SCHEME = 'oci://';
const HOST = /^(?:localhost|\[[0-9a-fA-F:]+\]|[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)+)(?::[0-9]{1,5})?$|^[a-zA-Z0-9-]+:[0-9]{1,5}$/;
const PATH_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^\w[\w.-]{0,127}$/;
const DIGEST = /^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$/;
const ARCHIVE_SUFFIX = /\.(?:tar|tar\.gz|tgz|tar\.xz|tar\.zst|zip)$/i;

/** Parses a reference; throws a 'bad-input' HangarError when it is not one. A missing tag and digest means `latest`. */
export function parseReference(ref: string): ImageReference {
  const parsed = tryParseReference(ref);
  if (!parsed) throw new HangarError('bad-input', `"${ref}" is not an OCI image reference`);
  return parsed;
}

/**
 * True for what this source should own. Local paths, file:// and http(s):// URLs never match, and a name without
 * a registry host must carry a tag or digest, so a relative directory like `backends/echo` stays a path.
 */
export function isOciReference(uri: string): boolean {
  if (ARCHIVE_SUFFIX.test(uri) || /^[./~\\]/.test(uri) || uri.includes('\\')) return false;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(uri) && !uri.startsWith(OCI_SCHEME)) return false;
  const parsed = tryParseReference(uri);
  if (!parsed) return false;
  const body = uri.startsWith(OCI_SCHEME) ? uri.slice(OCI_SCHEME.length) : uri;
  return uri.startsWith(OCI_SCHEME) || hasExplicitRegistry(body) || /[:@]/.test(body);
}

/** Base URL of the registry API: loopback registries speak plain http, Docker Hub lives on registry-1. */
export function registryBaseUrl(registry: string): string {
  if (registry === DOCKER_HUB) return 'https://registry-1.docker.io';
  const host = registry.replace(/:[0-9]+$/, '');
  const loopback = host === 'localhost' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
  return `${loopback ? 'http' : 'https'}://${registry}`;
}

function tryParseReference(ref: string): ImageReference | null {
  let rest = ref.startsWith(OCI_SCHEME) ? ref.slice(OCI_SCHEME.length) : ref;
  let digest: string | null = null;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) return null;
  }

  let registry = DOCKER_HUB;
  if (hasExplicitRegistry(rest)) {
    const slash = rest.indexOf('/');
    registry = rest.slice(0, slash);
    rest = rest.slice(slash + 1);
    if (registry === 'index.docker.io' || registry === 'registry-1.docker.io') registry = DOCKER_HUB;
  }

  let tag: string | null = null;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag)) return null;
  }

  const components = rest.split('/');
  if (!components.every((c) => PATH_COMPONENT.test(c))) return null;
  const repository = registry === DOCKER_HUB && components.length === 1 ? `library/${rest}` : rest;
  if (tag === null && digest === null) tag = 'latest';
  return { registry, repository, tag, digest };
}

/** Docker's rule: the first component names a registry when it looks like a host (a dot, a port, or localhost). */
function hasExplicitRegistry(nameWithoutDigest: string): boolean {
  const slash = nameWithoutDigest.indexOf('/');
  if (slash < 0) return false;
  const first = nameWithoutDigest.slice(0, slash);
  return (first.includes('.') || first.includes(':') || first === 'localhost') && HOST.test(first);
}
