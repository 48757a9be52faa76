import Type from 'typebox';
import { EVENT_TYPES } from '../../events/event-types.js';
import {
  ApiKeyQuery,
  ErrorSchema,
  meteredErrors,
  Nullable,
  RequestMetaSchema,
} from '../http/common.schema.js';
import { MAX_WATCH } from './watch.read-model.js';

const str = (description: string) => Type.Optional(Type.String({ description }));

/** An event's `data`: which members it has depends on its type (docs/events.md). */
export const EventDataSchema = Type.Object(
  {
    domain: str('Org, Location and Address events: the stable domain of the record.'),
    public_domain: str('Org and Location events: its public domain when the event was written.'),
    version_number: Type.Optional(
      Type.Integer({
        description:
          'Org, Location and Address events: the version the event made (1 for `*.created`). Each ' +
          'version of a record has exactly one event, so a gap in the numbers is a missed event.',
      }),
    ),
    changed: Type.Optional(
      Type.Array(Type.String(), {
        description:
          'Updates (`*.updated`, `org.left_register`, `location.closed`): the fields of the record ' +
          'that changed, as the API names them (`name`, `registration.date`, `public_domain`, ...). ' +
          'May be empty: an Org is also bumped when its registered address or a register field the API ' +
          'does not show changes (the address has its own `address.updated`).',
      }),
    ),
    org_domain: Type.Optional(
      Nullable(Type.String({ description: 'Location and Address events: the stable domain of their Org.' })),
    ),
    location_domain: str("Address events of a Location's address: the Location's stable domain."),
    left_register_on: str('`org.left_register`: the date the Org was marked as gone (`YYYY-MM-DD`).'),
    run_id: Type.Optional(Type.Integer({ description: '`import.*`: the import run.' })),
    feed: str('`import.*`: `registrar` or `locations`.'),
    full: Type.Optional(Type.Boolean({ description: '`import.*`: a `--full` run.' })),
    parts: Type.Optional(Type.Integer({ description: '`import.started`: the sources the run reads.' })),
    status: str('`import.completed`: `succeeded` or `failed`.'),
    first_id: Type.Optional(
      Nullable(Type.String({ description: '`import.completed`: its first record event.' })),
    ),
    last_id: Type.Optional(
      Nullable(Type.String({ description: '`import.completed`: its last record event.' })),
    ),
    counts: Type.Optional(
      Type.Object(
        {
          rows_read: Type.Integer(),
          inserted: Type.Integer(),
          updated: Type.Integer(),
          unchanged: Type.Integer(),
          rejected: Type.Integer(),
          closed: Type.Integer({ description: 'Orgs marked as gone, or Locations closed.' }),
        },
        { description: '`import.completed`: the run’s counts.' },
      ),
    ),
  },
  { title: 'EventData', additionalProperties: true },
);

export const EventSchema = Type.Object(
  {
    id: Type.String({ description: 'The event’s place in the feed; pass it as `after` to read on from it.' }),
    type: Type.String({ enum: [...EVENT_TYPES] }),
    created: Type.String({ format: 'date-time' }),
    data: EventDataSchema,
  },
  { title: 'Event' },
);

export const EventsQuery = Type.Object({
  ...ApiKeyQuery,
  after: Type.Optional(
    Type.String({
      maxLength: 48,
      description:
        'An event id (or a `next_cursor`): the page starts after it. Absent: from the oldest event kept.',
    }),
  ),
  limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'Events per page, 1-1000.' }),
  types: Type.Optional(
    Type.String({
      maxLength: 1000,
      description: `Comma-separated event types, exact or \`<kind>.*\`: ${EVENT_TYPES.join(', ')}.`,
      examples: ['org.*,location.closed', 'org.updated', 'import.*'],
    }),
  ),
  watch: Type.Optional(
    Type.String({
      maxLength: 20_000,
      description: `Comma-separated company numbers or Org domains (at most ${MAX_WATCH}): only events about those Orgs (their Locations and Addresses included).`,
    }),
  ),
  wait: Type.Integer({
    minimum: 0,
    maximum: 30,
    default: 0,
    description:
      'Seconds to hold an empty page open until an event arrives (long poll), 0-30. A page that has ' +
      'events, or more to read, answers at once.',
  }),
});

export const EventsPageSchema = Type.Object({
  events: Type.Array(EventSchema),
  next_cursor: Nullable(
    Type.String({
      description:
        'Pass as `after` for the next page: after the last event read (also past events a filter left ' +
        'out). null only when the feed holds nothing yet and `after` was absent.',
    }),
  ),
  has_more: Type.Boolean({ description: 'More events can be read now; false: you have caught up.' }),
  request: RequestMetaSchema,
});

export const eventsResponses = {
  200: EventsPageSchema,
  ...meteredErrors,
  410: ErrorSchema,
} as const;
