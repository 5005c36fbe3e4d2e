import { ipv4FromGroups, ipv6Groups } from '../net/ip-address.ts';

/**
 * The blocks a client address belongs to, as login throttling counts them (docs/security.md
 * "Password guessing and lock-out"). One IPv4 address is one client. An IPv6 host is routinely
 * given a whole /64 (SLAAC, privacy addresses) and a site a /48, so counting per exact IPv6 address
 * would hand out 2^64 fresh addresses, each with its own quota: IPv6 is counted per /64 (what one
 * host can rotate through) and per /48 (what one site can).
 */
export interface AddressBlocks {
  /** The unit of one client: the IPv4 address, or the IPv6 /64 (`2001:db8:1:2::/64`). */
  client: string;
  /** The IPv6 /48 (`2001:db8:1::/48`); absent for IPv4 and for what is not an IP address. */
  site?: string;
}

/** Parses `address` (as Fastify or grpc-js report it) into its throttling blocks; never throws. */
export function addressBlocks(address: string | undefined): AddressBlocks {
  const text = (address ?? '').trim().toLowerCase();
  if (text === '') return { client: 'unknown' };
  const groups = ipv6Groups(text);
  if (groups === null) return { client: text };
  // ::ffff:a.b.c.d is an IPv4 client on a dual-stack socket: the same client as a.b.c.d.
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) return { client: ipv4FromGroups(groups[6] ?? 0, groups[7] ?? 0) };
  return { client: prefix(groups, 4, 64), site: prefix(groups, 3, 48) };
}

const prefix = (groups: number[], count: number, bits: number): string =>
  `${groups.slice(0, count).map((group) => group.toString(16)).join(':')}::/${bits}`;
