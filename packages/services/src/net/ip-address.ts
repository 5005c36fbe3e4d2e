import { isIP } from 'node:net';

/**
 * The eight 16-bit groups of an IPv6 address (`::` shorthand, a dotted IPv4 tail, any case, a
 * zone id after `%` ignored), or null if the text is not an IPv6 address (node:net decides).
 * Shared by the private-network guard (sso/network-guard.ts) and login throttling's address
 * blocks (auth/address-blocks.ts), so both read every notation the same way.
 */
export function ipv6Groups(address: string): number[] | null {
  let text = (address.split('%')[0] ?? '').toLowerCase();
  if (isIP(text) !== 6) return null;
  const lastColon = text.lastIndexOf(':');
  if (text.includes('.', lastColon)) {
    const [a = 0, b = 0, c = 0, d = 0] = text.slice(lastColon + 1).split('.').map(Number);
    text = `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split('::');
  const parse = (part: string | undefined): number[] => (part ? part.split(':').map((group) => Number.parseInt(group, 16)) : []);
  const head = parse(halves[0]);
  const rest = halves.length === 2 ? parse(halves[1]) : [];
  const zeros = halves.length === 2 ? 8 - head.length - rest.length : 0;
  const groups = [...head, ...new Array<number>(Math.max(0, zeros)).fill(0), ...rest];
  return groups.length === 8 ? groups : null;
}

/** The dotted IPv4 address held by two 16-bit groups. */
export const ipv4FromGroups = (high: number, low: number): string => `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
