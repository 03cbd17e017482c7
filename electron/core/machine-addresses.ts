import { networkInterfaces } from 'node:os';

/** This machine's network addresses, loopback left out: what another program may have registered it under. */
export function machineAddresses(): string[] {
  const addresses = Object.values(networkInterfaces()).flatMap((list) => list ?? []);
  return [...new Set(addresses.filter((a) => !a.internal).map((a) => a.address))];
}
