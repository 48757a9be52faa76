import type { Static } from 'typebox';
import { orgDomain, orgPublicDomain } from '../../shared/domains.js';
import { toLocationView, toPhonesView } from '../locations/location.view.js';
import { isoDateTime, toAddressView } from '../records/address.view.js';
import type { OrgRecord } from '../records/records.js';
import type { OrgSchema } from './org.schema.js';

export type OrgView = Static<typeof OrgSchema>;

/**
 * The Org object of the spec, the same for `GET /v1/org/{domain}` and search results.
 * registration.address: the registered address for a registered Org, otherwise the default
 * Location's address (docs/decisions.md, Response shape).
 */
export function toOrgView(o: OrgRecord, suffix: string): OrgView {
  const domain = orgDomain(o.uid, o.domain_cc, suffix);
  const registered = o.registration_number !== null;
  return {
    description: o.description,
    domain,
    emails: { default: o.email },
    industry: { sic_code: o.sic_code },
    informal_name: o.informal_name,
    locations: {
      count: o.open_locations,
      default: o.default_location
        ? toLocationView(o.default_location, o.default_address, domain, suffix)
        : null,
    },
    logo_url: o.logo_url,
    name: o.name,
    phones: toPhonesView(o.phones),
    public_domain: orgPublicDomain(o.public_slug, suffix),
    registration: {
      country_code: o.registration_country,
      date: o.registration_date,
      number: o.registration_number,
      state_code: o.registration_state_code,
      address: toAddressView(registered ? o.registered_address : o.default_address, suffix),
    },
    updated: isoDateTime(o.updated),
    vat: { number: o.vat_number },
    version_number: o.version_number,
  };
}
