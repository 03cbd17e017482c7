// Cluster homes for tests, set up as a user does it: each home's key made (`hangar cluster key`), and each node
// trusting the others' keys (`hangar cluster trust KEY`), so that every agent may call every other.
import { loadIdentity, type ClusterIdentity } from './identity.ts';
import { addTrust } from './trust.ts';

export async function trustingHomes(homes: string[]): Promise<ClusterIdentity[]> {
  const identities = await Promise.all(homes.map((home) => loadIdentity(home)));
  for (const [i, home] of homes.entries()) {
    for (const [j, other] of identities.entries()) if (i !== j) await addTrust(home, other.publicKey, `test-${j}`);
  }
  return identities;
}
