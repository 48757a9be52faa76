import type { Static } from 'typebox';
import { accountPublicId } from '../accounts/public-ids.js';
import type { AttemptSchema, EndpointSchema } from './webhook.schema.js';
import type { EndpointRow } from './webhook-endpoint.repository.js';
import { endpointPublicId } from './webhook-endpoint.service.js';

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

/** An endpoint as the API shows it: never its secret. */
export function endpointView(row: EndpointRow, now: Date): Static<typeof EndpointSchema> {
  const rotationEnds =
    row.previous_secret_until && row.previous_secret_until > now ? row.previous_secret_until : null;
  return {
    id: endpointPublicId(row.uid),
    url: row.url,
    types: row.types,
    batch: row.batch,
    status: row.status,
    status_reason:
      row.status === 'disabled' ? row.disabled_reason : row.status === 'failing' ? row.last_error : null,
    created: iso(row.created_at)!,
    last_event_id: row.after_event,
    last_success: iso(row.last_success_at),
    failing_since: iso(row.failing_since),
    next_try: iso(row.next_attempt_at),
    replaying: row.replay_until !== null || row.replay_to !== null || row.replay_from !== null,
    previous_secret_expires: iso(rotationEnds),
  };
}

/** What an operator sees (`bizdir webhooks --json`): the endpoint and whose it is. */
export function operatorView(row: EndpointRow, now: Date) {
  return { ...endpointView(row, now), account_id: accountPublicId(row.account_uid), failures: row.failures };
}

export interface AttemptRow {
  webhook_id: string;
  event_ids: string[];
  attempted_at: Date;
  status: number | null;
  error: string | null;
  duration_ms: number;
  next_attempt_at: Date | null;
}

export function attemptView(row: AttemptRow): Static<typeof AttemptSchema> {
  return {
    webhook_id: row.webhook_id,
    event_ids: row.event_ids,
    attempted: iso(row.attempted_at)!,
    status: row.status,
    error: row.error,
    duration_ms: row.duration_ms,
    next_try: iso(row.next_attempt_at),
  };
}
