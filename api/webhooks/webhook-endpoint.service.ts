import type { Db } from '../../shared/db.js';
import { badRequest, HttpError, notFound } from '../../shared/errors.js';
import { type HostResolver, ReceiverRefusedError, resolveAllowed } from '../../webhooks/address-guard.js';
import {
  lockDelivery,
  OPERATOR_DISABLED,
  type ReplayRequest,
  rewind,
  startDelivery,
} from '../../webhooks/delivery.repository.js';
import { EVENT_TYPES, type EventFeed, isTypePattern } from '../../webhooks/event-feed.js';
import { generateSecret } from '../../webhooks/signing.js';
import {
  countEndpoints,
  deleteEndpoint,
  type EndpointRow,
  findEndpoint,
  findEndpointId,
  insertEndpoint,
  lockAccountEndpoints,
  rotateSecret,
} from './webhook-endpoint.repository.js';

export interface EndpointDeps {
  db: Db;
  feed: EventFeed;
  allowPrivate: boolean;
  maxEndpoints: number;
  resolve: HostResolver;
  now: () => Date;
}

/** How long the previous secret keeps signing after a rotation. */
export const ROTATION_OVERLAP_MS = 24 * 3_600_000;

/** The public id of an endpoint (`we_` + its stable uid) and back; anything else names none. */
export const endpointPublicId = (uid: string) => `we_${uid}`;
export const endpointUidOf = (publicId: string) => /^we_([0-9a-z]{8})$/.exec(publicId.trim())?.[1] ?? null;

const noEndpoint = () => notFound('No webhook endpoint has this id');

/**
 * A receiver URL as stored, or 400 saying what is wrong: https:// only (plain http:// and private
 * addresses where WEBHOOKS_ALLOW_PRIVATE is on), no credentials, and a host whose every address
 * may be sent to (checked again at every connection: webhooks/receiver-client.ts).
 */
export async function checkReceiverUrl(
  raw: string,
  options: { allowPrivate: boolean; resolve: HostResolver },
): Promise<string> {
  const url = URL.parse(raw.trim());
  if (!url) throw badRequest('url must be an absolute https:// URL');
  const schemes = options.allowPrivate ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol)) {
    throw badRequest(
      options.allowPrivate ? 'url must be an https:// or http:// URL' : 'url must be an https:// URL',
    );
  }
  if (url.username || url.password) throw badRequest('url must not hold a user name or password');
  if (!url.hostname) throw badRequest('url must name a host');
  try {
    await resolveAllowed(url.hostname, options);
  } catch (error) {
    if (error instanceof ReceiverRefusedError) throw badRequest(`url: ${error.message}`);
    throw error;
  }
  url.hash = '';
  return url.toString();
}

/** The type patterns as stored (each once, in the order given), or 400 naming an unknown one. */
export function checkTypes(types: readonly string[]): string[] {
  const unknown = types.find((t) => !isTypePattern(t));
  if (unknown !== undefined) {
    throw badRequest(
      `types: unknown event type "${unknown.slice(0, 60)}" (known: ${EVENT_TYPES.join(', ')}; ` +
        '`<kind>.*` for every type of a kind, `*` for all)',
    );
  }
  return [...new Set(types)];
}

export interface CreatedEndpoint {
  endpoint: EndpointRow;
  secret: string;
}

/** A new endpoint of the account, delivering the events written from now on. */
export async function createEndpoint(
  deps: EndpointDeps,
  accountId: number,
  input: { url: string; types: readonly string[]; batch?: boolean | undefined },
): Promise<CreatedEndpoint> {
  const types = checkTypes(input.types);
  const url = await checkReceiverUrl(input.url, deps);
  const secret = generateSecret();
  // Read before the transaction: events that become visible in between are delivered (at least once).
  const head = await deps.feed.head();
  const id = await deps.db.transaction().execute(async (trx) => {
    await lockAccountEndpoints(trx, accountId);
    if ((await countEndpoints(trx, accountId)) >= deps.maxEndpoints) {
      throw badRequest(
        `this account already has ${deps.maxEndpoints} webhook endpoints, the most it may have`,
      );
    }
    const row = await insertEndpoint(trx, { accountId, url, types, batch: input.batch ?? false, secret });
    await startDelivery(trx, row.id, head);
    return row.id;
  });
  return { endpoint: (await findEndpoint(deps.db, id))!, secret };
}

/** The account's endpoint named by its public id, or 404 (another account's id too). */
export async function ownEndpointId(db: Db, accountId: number | null, publicId: string): Promise<number> {
  const uid = endpointUidOf(publicId);
  const id = uid === null ? undefined : await findEndpointId(db, uid, accountId);
  if (id === undefined) throw noEndpoint();
  return id;
}

export async function getEndpoint(db: Db, id: number): Promise<EndpointRow> {
  const row = await findEndpoint(db, id);
  if (!row) throw noEndpoint();
  return row;
}

export async function removeEndpoint(db: Db, id: number): Promise<void> {
  if (!(await deleteEndpoint(db, id))) throw noEndpoint();
}

/** A new secret, shown once; the previous one signs beside it for ROTATION_OVERLAP_MS. */
export async function rotateEndpointSecret(deps: EndpointDeps, id: number): Promise<CreatedEndpoint> {
  const secret = generateSecret();
  const until = new Date(deps.now().getTime() + ROTATION_OVERLAP_MS);
  if (!(await rotateSecret(deps.db, id, secret, until))) throw noEndpoint();
  return { endpoint: await getEndpoint(deps.db, id), secret };
}

/**
 * Sends a range of events again: after an event id, or from a time, up to a time or to the end. The
 * cursor only ever moves back (a replay never skips what was not sent yet); with `to`, delivery
 * goes on from where it stood once the range is sent. Enables an endpoint its failures disabled.
 */
export async function replayEndpoint(deps: EndpointDeps, id: number, r: ReplayRequest): Promise<EndpointRow> {
  if ((r.after === undefined) === (r.from === undefined))
    throw badRequest('replay needs one of after (an event id) or from (a time)');
  if (r.from && r.to && r.to <= r.from) throw badRequest('to must be later than from');
  const { feed } = deps;
  // A malformed id is a 400, one older than the events kept a 410 (the feed's own errors).
  if (r.after !== undefined) await feed.read(r.after, 1, undefined);
  await deps.db.transaction().execute(async (trx) => {
    const state = await lockDelivery(trx, id);
    if (!state) throw noEndpoint();
    if (state.status === 'disabled' && state.disabled_reason === OPERATOR_DISABLED)
      throw new HttpError(409, 'this endpoint was disabled by an operator; it cannot be replayed');
    const current = state.after_event;
    const after = r.after !== undefined && feed.compare(r.after, current) < 0 ? r.after : undefined;
    // With an end, delivery resumes where it stood, or where an earlier replay would have resumed.
    const resume =
      state.replay_resume !== null && feed.compare(state.replay_resume, current) > 0
        ? state.replay_resume
        : current;
    await rewind(
      trx,
      id,
      {
        ...(after !== undefined ? { after } : {}),
        ...(r.from ? { from: r.from } : {}),
        ...(r.to ? { to: r.to } : {}),
        current,
        resume,
      },
      deps.now(),
    );
  });
  return getEndpoint(deps.db, id);
}
