import { createHmac, randomBytes } from 'node:crypto';

/**
 * Signing as the Standard Webhooks specification has it: a secret is `whsec_` + base64 of random
 * bytes, the key is those bytes, and each request carries `webhook-id`, `webhook-timestamp` (Unix
 * seconds) and `webhook-signature`: `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, one per
 * live secret, separated by spaces (a receiver accepts the request when any one matches).
 */

export const SECRET_PREFIX = 'whsec_';
/** 32 random bytes: above the specification's 24-byte floor, the length of the HMAC's own output. */
const SECRET_BYTES = 32;

export function generateSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString('base64')}`;
}

function keyOf(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error('a webhook secret starts with whsec_');
  return Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
}

/** One `v1,<signature>` of `id.timestamp.body` under `secret`. */
export function signature(secret: string, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', keyOf(secret))
    .update(`${id}.${timestampSeconds}.${body}`)
    .digest('base64');
  return `v1,${mac}`;
}

/** The three Standard Webhooks headers of one request, signed with every secret given (new first). */
export function signedHeaders(
  secrets: readonly string[],
  id: string,
  timestampSeconds: number,
  body: string,
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map((s) => signature(s, id, timestampSeconds, body)).join(' '),
  };
}
