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
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    const [high = 0, low = 0] = groups.slice(6);
    return { client: [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.') };
  }
  return { client: prefix(groups, 4, 64), site: prefix(groups, 3, 48) };
}

const prefix = (groups: number[], count: number, bits: number): string =>
  `${groups.slice(0, count).map((group) => group.toString(16)).join(':')}::/${bits}`;

/**
 * The eight 16-bit groups of an IPv6 address (`::` shorthand, a zone id, an embedded dotted IPv4
 * tail), or null if the text is not one.
 */
function ipv6Groups(text: string): number[] | null {
  if (!text.includes(':') || text.length > 64) return null;
  const withoutZone = text.split('%')[0] ?? '';
  const halves = withoutZone.split('::');
  if (halves.length > 2) return null;
  const last = halves.length - 1;
  const parts = (half: string | undefined, index: number): number[] | null => {
    if (half === undefined || half === '') return [];
    const out: number[] = [];
    const pieces = half.split(':');
    for (const [position, piece] of pieces.entries()) {
      if (/^[0-9a-f]{1,4}$/.test(piece)) out.push(parseInt(piece, 16));
      // A dotted IPv4 part may only end the address.
      else if (index === last && position === pieces.length - 1 && /^\d{1,3}(\.\d{1,3}){3}$/.test(piece)) {
        const bytes = piece.split('.').map(Number);
        if (bytes.some((byte) => byte > 255)) return null;
        out.push(((bytes[0] ?? 0) << 8) | (bytes[1] ?? 0), ((bytes[2] ?? 0) << 8) | (bytes[3] ?? 0));
      } else return null;
    }
    return out;
  };
  const head = parts(halves[0], 0);
  const tail = parts(halves[1], 1);
  if (head === null || tail === null) return null;
  if (halves.length === 1) return head.length === 8 ? head : null;
  const missing = 8 - head.length - tail.length;
  if (missing < 1) return null;
  return [...head, ...Array<number>(missing).fill(0), ...tail];
}
