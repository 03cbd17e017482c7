// What a node keeps in its home and shows in Settings; secrets only as whether one is kept. Plain JSON only: no bigint, no Date.
import type { LocalAiStatusView } from './localai.ts';

/** One gallery a node reads: `location` is "starter" (the one Hangar ships), an absolute path, or a URL. */
export interface GallerySetting {
  name: string;
  location: string;
  enabled: boolean;
}

/** A node's settings, kept in its home; each takes effect at once. */
export interface NodeSettings {
  /** In order: the first gallery that lists a name wins. */
  galleries: GallerySetting[];
  /** Upgrade every upgradable backend when a gallery changes, and every `autoUpgradeHours`. */
  autoUpgrade: boolean;
  autoUpgradeHours: number;
  /** The loopback ports backends are started on. */
  portRange: [number, number];
  /** Leave the backends running when the host quits (they are re-adopted on the next start). */
  keepBackendsRunning: boolean;
  /** Start again, on the host's next start, the models that ran when it quit. */
  startBackendsOnLaunch: boolean;
  /** KEY=VALUE tags the cluster selects nodes by (`--on label:gpu=nvidia`). */
  labels: Record<string, string>;
  /** No rollout or convergence touches a cordoned node. */
  cordoned: boolean;
  /**
   * Before an install, upgrade or rollback is done, start the new build once and wait for its Health answer when no
   * process of the old one runs to be respawned from it (those are the health gate otherwise).
   */
  smokeStart: boolean;
  /**
   * After a swap of a backend (Hangar's, or LocalAI's own), bring back on the new tree the models a linked LocalAI
   * server runs from the replaced one (shutdown, then load).
   */
  localaiRespawn: boolean;
  /** Start LocalAI run by Hangar with the agent (`hangar localai`). */
  localaiAutostart: boolean;
  /**
   * How long a backend's start (spawn to Health) and a model's LoadModel may take, in seconds; never less than twice the
   * longest this node has seen that backend take.
   */
  startTimeoutSec: number;
  /** A backend's own start timeout, in seconds, over startTimeoutSec (a model's `load --start-timeout` is over both). */
  backendStartTimeoutSec: Record<string, number>;
}

export interface SettingsView {
  settings: NodeSettings;
  /** Settings the host fixed for this run (how it was started); they cannot be changed until it restarts. */
  fixed: (keyof NodeSettings)[];
}

/** How a host joins a cluster, as its viewers may see it: a password or token is never sent back, only that one is kept. */
export interface ClusterJoin {
  url: string;
  name: string | null;
  user: string | null;
  credsFile: string | null;
  caFile: string | null;
  insecure: boolean;
  hasPassword: boolean;
  hasToken: boolean;
}

/** The LocalAI cluster a host manages workers of, as its viewers may see it: secrets only as "one is kept". */
export interface LocalAiJoin {
  /** The frontend's address (`local-ai run --distributed`), e.g. http://lai.lan:8080. */
  frontend: string;
  hasApiKey: boolean;
  /** The NATS server the frontend and its workers use. */
  nats: string;
  natsUser: string | null;
  hasNatsPassword: boolean;
  hasNatsToken: boolean;
  natsCredsFile: string | null;
  natsCaFile: string | null;
  insecure: boolean;
}

export interface LocalAiSettingsView {
  localai: LocalAiJoin | null;
  /** Why it cannot be changed here (set on the agent's command line), or null. */
  fixed: string | null;
  status: LocalAiStatusView | null;
}

/** A machine's roles in a cluster joined by invitation. */
export type InvitedRole = 'node' | 'viewer' | 'node+viewer';

/** Settings → Cluster's invitations: whether this host's home may make them, and the membership it holds. */
export interface ClusterInvitationsView {
  /** The home ran `hangar cluster init`: it invites machines. */
  admin: boolean;
  member: { cluster: string; url: string; name: string; role: InvitedRole } | null;
  /** It holds a membership this running host is not connected with: it joins when the host next starts. */
  restart: boolean;
}

/** An invitation made from Settings: the one command that joins the machine. It holds a secret, shown only to who asked. */
export interface ClusterInvitation {
  command: string;
  name: string;
  role: InvitedRole;
  /** ISO time after which it is refused. */
  expires: string;
}

export interface ClusterSettingsView {
  /** What the host joined when it started, or null when it runs alone. */
  joined: ClusterJoin | null;
  /** What it joins when it next starts. */
  next: ClusterJoin | null;
  /** Why the cluster cannot be changed here, or null. */
  fixed: string | null;
}
