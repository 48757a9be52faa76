import {
  addressDomain,
  bizdirUid,
  locationDomain,
  locationPublicDomain,
  orgDomain,
  orgPublicDomain,
} from '../shared/domains.js';
import { encodeCursor } from './event-cursor.js';

/** One event as the feed and webhooks send it. */
export interface FeedEvent {
  id: string;
  type: string;
  created: string;
  data: Record<string, unknown>;
}

/** An events row as the read model selects it (xid as text, `data` as migration 0025 stores it). */
export interface EventRow {
  xid: string;
  seq: number;
  type: string;
  created: Date;
  org_id: number | null;
  data: StoredData;
}

/** What the triggers store (labels and ids; the suffix is configuration, the uids are computed here). */
interface StoredData {
  [key: string]: unknown;
  id?: number;
  uid?: string;
  cc?: string;
  slug?: string;
  org_cc?: string;
  loc_uid?: string;
  loc_cc?: string;
  version_number?: number;
  changed?: string[];
}

const withChanged = (d: StoredData) => (d.changed === undefined ? {} : { changed: d.changed });

/** The public `data` of an event: the record's domains, its version and, for updates, what changed. */
function dataOf(kind: string, orgId: number | null, d: StoredData, suffix: string): Record<string, unknown> {
  const org = orgId !== null && d.org_cc !== undefined ? orgDomain(bizdirUid(orgId), d.org_cc, suffix) : null;
  switch (kind) {
    case 'org':
      return {
        domain: orgDomain(bizdirUid(orgId!), d.cc!, suffix),
        public_domain: orgPublicDomain(d.slug!, suffix),
        version_number: d.version_number,
        ...withChanged(d),
        ...(d.left_register_on === undefined ? {} : { left_register_on: d.left_register_on }),
      };
    case 'location':
      return {
        domain: locationDomain(d.uid!, d.cc!, suffix),
        public_domain: locationPublicDomain(d.slug!, suffix),
        version_number: d.version_number,
        ...withChanged(d),
        org_domain: org,
      };
    case 'address':
      return {
        domain: addressDomain(bizdirUid(d.id!), d.cc!, suffix),
        version_number: d.version_number,
        ...withChanged(d),
        org_domain: org,
        ...(d.loc_uid === undefined ? {} : { location_domain: locationDomain(d.loc_uid, d.loc_cc!, suffix) }),
      };
    default:
      // import.*: stored as sent.
      return d;
  }
}

export function toFeedEvent(row: EventRow, suffix: string): FeedEvent {
  return {
    id: encodeCursor(row),
    type: row.type,
    created: row.created.toISOString(),
    data: dataOf(row.type.slice(0, row.type.indexOf('.')), row.org_id, row.data, suffix),
  };
}
