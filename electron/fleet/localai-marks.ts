// The node's catalog behind the LocalAI runner's backend marks: once LocalAI's version changed, which installed
// backends LocalAI's gallery marks for upgrade, by LocalAI's own rule (the catalog's), with every tag digest read again
// from its registry rather than from the cache kept under the LocalAI before; and a mark gone once its backend is not
// upgradable any more (upgraded by Upgrade all or one by one, or deleted).
import type { BackendView } from '../../shared/types.ts';
import type { LocalNode } from '../core/node.ts';
import type { BackendMarks, MarkCheck } from '../localai/runner/backend-marks.ts';
import { oneLine } from '../../shared/error-text.ts';

export function markCheck(node: LocalNode): MarkCheck {
  return async () => {
    await node.gallery({ node: node.id, refresh: true });
    const [backends, { galleryProblems }] = await Promise.all([node.backends({ node: node.id }), node.info({ node: node.id })]);
    return {
      marked: backends.filter((b) => b.upgradable).map((b) => ({ name: b.name, why: whyMarked(b) })),
      unread: galleryProblems.length > 0 ? galleryProblems.map((p) => `${p.gallery} (${p.message})`).join(', ') : null,
    };
  };
}

/** "new build" when the gallery has the installed version (or tag) with another digest; else the two versions. */
export function whyMarked(backend: BackendView): string {
  const available = backend.availableVersion;
  return available === null || available === backend.version ? 'new build' : `${backend.version ?? 'no version'} → ${available}`;
}

/** Drops each mark whose backend is no longer upgradable: now (the agent was away), and as the node's rows change. */
export function followMarks(node: LocalNode, marks: BackendMarks, log: (line: string) => void): void {
  const failed = (error: unknown) => log(`LocalAI's backend marks could not be saved: ${oneLine(error)}`);
  node.on('event', (event) => {
    if (event.type === 'backend' && !event.backend.upgradable) void marks.drop((name) => name === event.backend.name).catch(failed);
    if (event.type === 'backend-removed') void marks.drop((name) => name === event.name).catch(failed);
  });
  if (marks.list().length === 0) return;
  void node
    .backends({ node: node.id })
    .then((views) => marks.drop((name) => !views.some((v) => v.name === name && v.upgradable)))
    .catch(failed);
}
