import { REVOKED } from '../../../shared/cluster-link.ts';
import { linkLost, useCluster } from '../state/cluster.ts';

/**
 * This host's link to the cluster, when it is not well: lost (the client keeps retrying; this node stays usable, the
 * others are unknown), refused for good (an admin revoked this machine), or refused something by the NATS server (a
 * permission its credentials lack).
 */
export function ClusterBanner() {
  const lost = useCluster(linkLost);
  const refused = useCluster((s) => s.status?.violations.at(-1) ?? null);
  if (lost === REVOKED) {
    // Its refused tries to reconnect are no missing permission.
    return (
      <div className="banner danger" role="alert" data-testid="cluster-banner">
        {lost[0]!.toUpperCase() + lost.slice(1)}. It stays usable on its own; a new invitation joins it again (hangar cluster invite, on an admin).
      </div>
    );
  }
  return (
    <>
      {lost && (
        <div className="banner" role="status" data-testid="cluster-banner">
          <span className="spinner" aria-hidden="true" /> cluster connection lost: {lost}, retrying. This node stays usable; the others are unknown
          until it is back.
        </div>
      )}
      {refused && (
        <div className="banner danger" role="alert" data-testid="cluster-refused">
          The NATS server refused this host: {refused.message}
          {refused.count > 1 && ` (${refused.count} times)`}. Its cluster credentials lack a permission: see hangar cluster nats-config.
        </div>
      )}
    </>
  );
}
