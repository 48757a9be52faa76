import { promises as dns } from 'node:dns';
import ipaddr from 'ipaddr.js';

/**
 * Which addresses a webhook may be sent to. A receiver must be a public unicast address: anything
 * else (loopback, private, carrier-grade NAT, link-local, unique-local, multicast, unspecified,
 * reserved, documentation, 6to4, Teredo, ...) is refused unless the operator allows private
 * receivers (WEBHOOKS_ALLOW_PRIVATE=on). Cloud-metadata addresses are refused even then: no
 * receiver lives there, and reaching one from a worker hands out the machine's credentials.
 *
 * Addresses are normalised first, so that an IPv4 address cannot hide inside IPv6: an IPv4-mapped
 * (`::ffff:127.0.0.1`), IPv4-translated or NAT64 (`64:ff9b::7f00:1`) address is judged as the IPv4
 * address it reaches.
 */

/** Where instance metadata services answer (AWS, GCP, Azure, OpenStack; ECS tasks; Alibaba). */
const METADATA = new Set([
  '169.254.169.254',
  '169.254.170.2',
  '100.100.100.200',
  'fd00:ec2::254',
  'fd00:ec2::23',
]);

const REASONS: Record<string, string> = {
  loopback: 'a loopback address',
  private: 'a private address',
  carrierGradeNat: 'a shared (carrier-grade NAT) address',
  linkLocal: 'a link-local address',
  uniqueLocal: 'a unique-local address',
  multicast: 'a multicast address',
  unspecified: 'an unspecified address',
  broadcast: 'a broadcast address',
  deprecatedSiteLocal: 'a site-local address',
};

/** The global unicast block (2000::/3): the only IPv6 space a public receiver can have. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');
/** RFC 6052's well-known NAT64 prefix: the last 32 bits are the IPv4 address it reaches. */
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96');

/**
 * The address a connection to `address` really reaches: IPv4 inside IPv6 (mapped, translated,
 * NAT64 well-known prefix) becomes that IPv4 address. Throws on text that is no IP address.
 */
export function normalizeAddress(address: string): ipaddr.IPv4 | ipaddr.IPv6 {
  const parsed = ipaddr.parse(address.replace(/^\[|\]$/g, '').replace(/%.*$/, ''));
  if (parsed.kind() === 'ipv4') return parsed;
  const v6 = parsed as ipaddr.IPv6;
  const range = v6.range();
  if (range === 'ipv4Mapped' || range === 'rfc6145' || v6.match(NAT64_WELL_KNOWN)) {
    const bytes = v6.toByteArray().slice(12);
    return new ipaddr.IPv4(bytes);
  }
  return v6;
}

/** Why a connection to `address` is refused, or null when it may be made. */
export function addressRefusal(address: string, allowPrivate: boolean): string | null {
  let normal: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    normal = normalizeAddress(address);
  } catch {
    return `${address} is not an IP address`;
  }
  if (METADATA.has(normal.toString())) return `${address} is a cloud-metadata address`;
  if (allowPrivate) return null;
  const range = normal.range();
  const isPublic =
    range === 'unicast' && (normal.kind() === 'ipv4' || (normal as ipaddr.IPv6).match(GLOBAL_UNICAST_V6));
  if (isPublic) return null;
  return `${address} is ${REASONS[range] ?? 'not a public unicast address'}`;
}

/** One resolved address of a host name, as `dns.lookup(..., {all: true})` gives them. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/**
 * Resolves a host name to its addresses. The default asks the system resolver; tests inject their
 * own (there is no DNS where they run), and so can an operator's embedding.
 */
export type HostResolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: HostResolver = async (hostname) => {
  const found = await dns.lookup(hostname, { all: true, verbatim: true });
  return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

/** A receiver's host refused (or unresolvable): the message says which and why. */
export class ReceiverRefusedError extends Error {
  override name = 'ReceiverRefusedError';
}

/** How long a resolution may take before the host counts as unresolvable. */
export const RESOLVE_TIMEOUT_MS = 5_000;

/**
 * The addresses `hostname` resolves to, every one of them allowed; throws ReceiverRefusedError
 * when one is refused (a name that also resolves to a private address is not trusted at all, so a
 * mixed answer cannot be used to reach it) or when the name does not resolve.
 */
export async function resolveAllowed(
  hostname: string,
  options: { allowPrivate: boolean; resolve: HostResolver; timeoutMs?: number },
): Promise<ResolvedAddress[]> {
  const timeoutMs = options.timeoutMs ?? RESOLVE_TIMEOUT_MS;
  const bare = hostname.replace(/^\[|\]$/g, '');
  if (ipaddr.isValid(bare)) {
    const refusal = addressRefusal(bare, options.allowPrivate);
    if (refusal) throw new ReceiverRefusedError(refusal);
    return [{ address: bare, family: ipaddr.parse(bare).kind() === 'ipv6' ? 6 : 4 }];
  }
  let timer: NodeJS.Timeout | undefined;
  let found: ResolvedAddress[];
  try {
    found = await Promise.race([
      options.resolve(bare),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new ReceiverRefusedError(`${bare} did not resolve within ${timeoutMs / 1000} s`)),
          timeoutMs,
        );
      }),
    ]);
  } catch (error) {
    if (error instanceof ReceiverRefusedError) throw error;
    throw new ReceiverRefusedError(`${bare} does not resolve`);
  } finally {
    clearTimeout(timer);
  }
  if (found.length === 0) throw new ReceiverRefusedError(`${bare} does not resolve`);
  for (const { address } of found) {
    const refusal = addressRefusal(address, options.allowPrivate);
    if (refusal)
      throw new ReceiverRefusedError(`${bare} resolves to ${refusal.replace(/^\S+ is /, '')} (${address})`);
  }
  return found;
}
