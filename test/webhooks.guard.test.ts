import { describe, expect, it } from 'vitest';
import {
  addressRefusal,
  type HostResolver,
  normalizeAddress,
  ReceiverRefusedError,
  resolveAllowed,
} from '../webhooks/address-guard.js';

/** A resolver of fixed answers: there is no DNS where the tests run. */
const resolver =
  (names: Record<string, string[]>): HostResolver =>
  async (host) => {
    const found = names[host];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };

describe('webhook receiver addresses', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.8.9.10', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.254', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['169.254.10.10', 'link-local'],
    ['169.254.169.254', 'cloud-metadata'],
    ['0.0.0.0', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['192.0.2.7', 'public unicast'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'link-local'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456::1', 'unique-local'],
    ['fd00:ec2::254', 'cloud-metadata'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:169.254.169.254', 'cloud-metadata'],
    ['64:ff9b::7f00:1', 'loopback'],
    ['64:ff9b::a9fe:a9fe', 'cloud-metadata'],
    ['::127.0.0.1', 'loopback'],
    ['::7f00:1', 'public unicast'],
    ['2002:7f00:1::1', 'public unicast'],
    ['2001:db8::1', 'public unicast'],
  ])('refuses %s (%s)', (address, kind) => {
    expect(addressRefusal(address, false)).toContain(kind);
  });

  it('allows public unicast addresses, and NAT64 forms of them', () => {
    for (const address of ['93.184.216.34', '8.8.8.8', '2606:4700::1111', '64:ff9b::5db8:d822']) {
      expect(addressRefusal(address, false)).toBeNull();
    }
  });

  it('normalises IPv4 hidden in IPv6 to the IPv4 address it reaches', () => {
    expect(normalizeAddress('::ffff:127.0.0.1').toString()).toBe('127.0.0.1');
    expect(normalizeAddress('[::ffff:7f00:1]').toString()).toBe('127.0.0.1');
    expect(normalizeAddress('64:ff9b::a00:1').toString()).toBe('10.0.0.1');
    expect(normalizeAddress('fe80::1%eth0').toString()).toBe('fe80::1');
  });

  it('with WEBHOOKS_ALLOW_PRIVATE on, allows private addresses but never cloud metadata', () => {
    for (const address of ['127.0.0.1', '10.1.2.3', '::1', '::ffff:127.0.0.1', 'fd12::1']) {
      expect(addressRefusal(address, true)).toBeNull();
    }
    expect(addressRefusal('169.254.169.254', true)).toContain('cloud-metadata');
    expect(addressRefusal('::ffff:169.254.169.254', true)).toContain('cloud-metadata');
    expect(addressRefusal('fd00:ec2::254', true)).toContain('cloud-metadata');
  });

  const names = resolver({
    'loopback.test': ['127.0.0.1'],
    'ten.test': ['10.0.0.5'],
    'metadata.test': ['169.254.169.254'],
    'v6-loopback.test': ['::1'],
    'mapped.test': ['::ffff:127.0.0.1'],
    'mixed.test': ['93.184.216.34', '10.0.0.5'],
    'public.test': ['93.184.216.34', '2606:4700::1111'],
  });

  it.each([
    ['loopback.test', /resolves to a loopback address \(127\.0\.0\.1\)/],
    ['ten.test', /resolves to a private address/],
    ['metadata.test', /resolves to a cloud-metadata address/],
    ['v6-loopback.test', /resolves to a loopback address \(::1\)/],
    ['mapped.test', /resolves to a loopback address \(::ffff:127\.0\.0\.1\)/],
    ['mixed.test', /resolves to a private address \(10\.0\.0\.5\)/],
    ['nowhere.test', /does not resolve/],
    ['[::1]', /::1 is a loopback address/],
    ['127.0.0.1', /127\.0\.0\.1 is a loopback address/],
    ['[::ffff:127.0.0.1]', /is a loopback address/],
  ])('refuses the host %s', async (host, message) => {
    const attempt = resolveAllowed(host, { allowPrivate: false, resolve: names });
    await expect(attempt).rejects.toBeInstanceOf(ReceiverRefusedError);
    await expect(attempt).rejects.toThrow(message);
  });

  it('gives every address of a host whose addresses are all public', async () => {
    const found = await resolveAllowed('public.test', { allowPrivate: false, resolve: names });
    expect(found.map((a) => a.address)).toEqual(['93.184.216.34', '2606:4700::1111']);
  });

  it('gives up on a resolver that does not answer', async () => {
    const never: HostResolver = () => new Promise(() => undefined);
    await expect(
      resolveAllowed('slow.test', { allowPrivate: false, resolve: never, timeoutMs: 50 }),
    ).rejects.toThrow(/did not resolve within/);
  });
});
