// The LocalAI Hangar runs becomes the server beside the node with nothing typed: the existing link is pointed at its
// URL and key (the link finds its pid as the process listening on that loopback port, so its model processes are
// told as its children). An agent started with --localai-url keeps the server it names.
import type { LocalAiServer } from '../server/server.ts';

export async function linkRunLocalAi(link: LocalAiServer, server: { url: string; apiKey: string; pid: number }): Promise<string> {
  const current = link.view();
  if (current.fixed) return `not linked: the agent links ${current.url} (--localai-url)`;
  await link.update({ url: server.url, apiKey: server.apiKey });
  return `linked as the LocalAI server beside this node (pid ${server.pid})`;
}
