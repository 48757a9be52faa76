import Type from 'typebox';
import { Nullable, NullableString, RequestMetaSchema } from '../http/common.schema.js';

const DateTime = (description: string) => Nullable(Type.String({ format: 'date-time', description }));

const TypeList = Type.Array(
  Type.String({ minLength: 1, maxLength: 64, description: 'An event type, `<kind>.*`, or `*`.' }),
  {
    minItems: 1,
    maxItems: 20,
    description:
      'The event types to deliver: exact types (`location.closed`), `<kind>.*` (`org.*`) or `*` (all).',
  },
);

export const EndpointIdParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 64, description: 'The endpoint id (`we_…`).' }),
});

export const CreateEndpointBody = Type.Object(
  {
    url: Type.String({
      minLength: 1,
      maxLength: 2048,
      description:
        'Where events are POSTed: an https:// URL whose host resolves to public addresses only ' +
        '(plain http:// and private addresses only where the operator allows them).',
    }),
    types: TypeList,
    batch: Type.Optional(
      Type.Boolean({
        default: false,
        description: 'true: up to 100 events per request, as `{"events": [...]}`, in feed order.',
      }),
    ),
  },
  { additionalProperties: false, title: 'WebhookEndpointInput' },
);

export const ReplayBody = Type.Object(
  {
    after: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description: 'Send again every event after this event id.',
      }),
    ),
    from: Type.Optional(
      Type.String({
        format: 'date-time',
        description: 'Send again from the first event created at or after this time.',
      }),
    ),
    to: Type.Optional(
      Type.String({
        format: 'date-time',
        description: 'End of the range (events created before it); then delivery goes on where it stood.',
      }),
    ),
  },
  { additionalProperties: false, title: 'WebhookReplay' },
);

const EndpointFields = {
  id: Type.String({ description: '`we_` + 8 characters.' }),
  url: Type.String(),
  types: Type.Array(Type.String()),
  batch: Type.Boolean(),
  status: Type.Union([Type.Literal('active'), Type.Literal('failing'), Type.Literal('disabled')], {
    description:
      '`active`; `failing`: its oldest undelivered request failed and is being retried (see next_try); ' +
      '`disabled`: nothing is sent (410 Gone, 5 days without a 2xx, or an operator; `status_reason` says which).',
  }),
  status_reason: NullableString('Why it is failing or disabled.'),
  created: Type.String({ format: 'date-time' }),
  last_event_id: NullableString(
    'The last event delivered (or passed over as not of its types): delivery goes on after it.',
  ),
  last_success: DateTime('The last 2xx.'),
  failing_since: DateTime('The first failure since the last 2xx.'),
  next_try: DateTime('When the failing request is tried again.'),
  replaying: Type.Boolean({ description: 'A replay with an end is under way.' }),
  previous_secret_expires: DateTime('During a rotation: until when the previous secret also signs.'),
};

export const EndpointSchema = Type.Object(EndpointFields, { title: 'WebhookEndpoint' });

export const EndpointAnswer = Type.Object({ ...EndpointFields, request: RequestMetaSchema });

export const EndpointWithSecretAnswer = Type.Object({
  ...EndpointFields,
  secret: Type.String({
    description: 'The signing secret, `whsec_` + base64: shown in this answer only, keep it.',
  }),
  request: RequestMetaSchema,
});

export const EndpointListAnswer = Type.Object({
  endpoints: Type.Array(EndpointSchema),
  request: RequestMetaSchema,
});

export const DeletedAnswer = Type.Object({
  id: Type.String(),
  deleted: Type.Boolean(),
  request: RequestMetaSchema,
});

export const DeliveriesQuery = Type.Object({
  limit: Type.Integer({
    minimum: 1,
    maximum: 100,
    default: 20,
    description: 'How many attempts, newest first.',
  }),
});

export const AttemptSchema = Type.Object(
  {
    webhook_id: Type.String({
      description: "The request's `webhook-id`: the same on every try of the same events.",
    }),
    event_ids: Type.Array(Type.String()),
    attempted: Type.String({ format: 'date-time' }),
    status: Nullable(Type.Integer({ description: "The answer's HTTP status; null: no answer." })),
    error: NullableString('What went wrong: no answer, a timeout, a redirect, a refused address.'),
    duration_ms: Type.Integer(),
    next_try: DateTime('After a failure: when the same request is tried again.'),
  },
  { title: 'WebhookAttempt' },
);

export const DeliveriesAnswer = Type.Object({
  deliveries: Type.Array(AttemptSchema),
  request: RequestMetaSchema,
});
