// What `hangar localai status` says of the LocalAI links Hangar did not make by running LocalAI itself: a LocalAI
// server beside the node (--localai-url, Settings → LocalAI server) and a LocalAI cluster's frontend and NATS.
import type { LocalAiRunView, LocalAiServerView, LocalAiSettingsView } from '../../../shared/types.ts';

export function linkLines(run: LocalAiRunView, server: LocalAiServerView, cluster: LocalAiSettingsView): string[] {
  const lines: string[] = [];
  // The LocalAI Hangar runs is the server it links: its own `link:` line says how that stands.
  if (server.url && run.link === null) lines.push(`LocalAI server: ${serverText(server)}`);
  if (server.status?.backendsNote) lines.push(`LocalAI server: ${server.status.backendsNote}`);
  const link = cluster.status;
  if (link) lines.push(`LocalAI cluster: ${link.connected ? `${link.frontend}, ${link.workers} backend worker${link.workers === 1 ? '' : 's'}` : `not linked: ${link.reason ?? 'not reached yet'}`}`);
  return lines;
}

function serverText({ url, status }: LocalAiServerView): string {
  if (!status) return `${url}, not asked yet`;
  if (!status.connected) return `not linked: ${status.reason ?? `${url} does not answer`}`;
  return `${url}, linked (${status.version ?? 'version unknown'}, ${status.models} model${status.models === 1 ? '' : 's'} loaded)`;
}
