// The cluster a host joins, as its Settings show it: what it joined when it started, what it joins next, and
// whether it can be changed there. An agent takes it from how it was started; the desktop keeps it in its own
// settings file. A password or token never leaves the host: viewers learn only that one is kept.
import type { ClusterJoinRequest } from '../../shared/api.ts';
import type { ClusterJoin, ClusterSettingsView } from '../../shared/types.ts';
import { KeptSetting, type SettingPlace } from '../core/kept-setting.ts';

export interface ClusterSettings {
  view(): ClusterSettingsView;
  update(next: ClusterJoinRequest | null): Promise<ClusterSettingsView>;
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

const FIXED = 'This agent joins the cluster it was started with; another one takes a restart of the agent.';

/** An agent's: the cluster on its command line (or none), for as long as it runs. */
export function fixedClusterSettings(joined: JoinLike | undefined): ClusterSettings {
  const place: SettingPlace<JoinLike> = { read: async () => null, write: async () => undefined };
  return clusterSettings(joined, new KeptSetting({ place, fixed: { value: joined ?? null, reason: FIXED }, secrets: [] }));
}

/** The desktop's: kept in `place`; the host joins what it keeps at its next start. */
export async function storedClusterSettings(joined: JoinLike | undefined, place: SettingPlace<ClusterJoinRequest>): Promise<ClusterSettings> {
  const setting = new KeptSetting({ place, secrets: ['password', 'token'] });
  await setting.load();
  return clusterSettings(joined, setting);
}

function clusterSettings<T extends JoinLike>(joined: JoinLike | undefined, setting: KeptSetting<T>): ClusterSettings {
  const view = (): ClusterSettingsView => ({ joined: publicJoin(joined), next: publicJoin(setting.get()), fixed: setting.fixedReason });
  return {
    view,
    update: async (next) => {
      await setting.save(next as T | null);
      return view();
    },
  };
}
