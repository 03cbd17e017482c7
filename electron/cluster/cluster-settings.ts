// The cluster a host joins, as its Settings show it: what it joined when it started, what it joins next, and
// whether it can be changed there. An agent takes it from how it was started; the desktop keeps it in its own
// settings file. A password or token never leaves the host: viewers learn only that one is kept.
import type { ClusterJoinRequest } from '../../shared/api.ts';
import { HangarError } from '../../shared/errors.ts';
import type { ClusterJoin, ClusterSettingsView } from '../../shared/types.ts';
import { withSecretsKept } from '../core/secrets.ts';

export interface ClusterSettings {
  view(): ClusterSettingsView;
  update(next: ClusterJoinRequest | null): ClusterSettingsView;
}

type JoinLike = Omit<ClusterJoinRequest, 'name'> & { name?: string | undefined };

export function publicJoin(join: JoinLike | null | undefined): ClusterJoin | null {
  if (!join) return null;
  return {
    url: join.url,
    name: join.name ?? null,
    user: join.user ?? null,
    credsFile: join.credsFile ?? null,
    caFile: join.caFile ?? null,
    insecure: join.insecure === true,
    hasPassword: Boolean(join.password),
    hasToken: Boolean(join.token),
  };
}

/** An agent's: the cluster on its command line, for as long as it runs. */
export function fixedClusterSettings(joined: JoinLike | undefined): ClusterSettings {
  const fixed = 'This agent joins the cluster it was started with; another one takes a restart of the agent.';
  const view: ClusterSettingsView = { joined: publicJoin(joined), next: publicJoin(joined), fixed };
  return {
    view: () => view,
    update: () => {
      throw new HangarError('conflict', fixed);
    },
  };
}

/** The desktop's: what `read` gives, changed through `save`; the host joins it at its next start. */
export function storedClusterSettings(
  joined: JoinLike | undefined,
  read: () => ClusterJoinRequest | null,
  save: (next: ClusterJoinRequest | null) => void,
): ClusterSettings {
  const view = (): ClusterSettingsView => ({ joined: publicJoin(joined), next: publicJoin(read()), fixed: null });
  return {
    view,
    update: (next) => {
      save(next && withSecretsKept(next, read(), ['password', 'token']));
      return view();
    },
  };
}
