import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import { type EventFilter, expandTypes, readEvents } from '../../events/feed.read-model.js';
import { LOCAL_DEFAULTS } from '../../shared/config.js';
import { badRequest } from '../../shared/errors.js';
import { EventWaiter } from './event-waiter.js';
import { EventsQuery, eventsResponses } from './events.schema.js';
import { resolveWatch } from './watch.read-model.js';

/** The items of a comma-separated parameter; an empty item is a 400 (`types=org.*,`). */
function listOf(name: string, value: string): string[] {
  const items = value.split(',').map((s) => s.trim());
  if (items.some((s) => s === ''))
    throw badRequest(`${name} must be a comma-separated list without empty items`);
  return items;
}

/**
 * GET /v1/events: the change feed (docs/events.md). A page with events costs one credit, an empty
 * one none (`mayBeFree`: no credit is held while the request waits). With `wait`, an empty page
 * waits for events (EventWaiter), holding no Postgres connection.
 */
export const eventRoutes: FastifyPluginAsync = async (root) => {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const suffix = app.config.domainSuffix;
  const waiter = new EventWaiter(app.db, app.config.databaseUrl ?? LOCAL_DEFAULTS.databaseUrl, app.log);
  // Waiting requests answer (an empty page) as soon as the server starts closing.
  app.addHook('preClose', async () => {
    await waiter.close();
  });

  app.get(
    '/v1/events',
    {
      config: { metered: true, mayBeFree: true },
      schema: {
        tags: ['events'],
        summary: 'The change feed: every record created, changed, gone or closed, in order',
        description:
          'Events in feed order after `after`. Reading on from `next_cursor` never repeats an event and ' +
          'never skips one, whatever order the changes committed in. Events are kept ' +
          `${app.config.eventsRetentionDays} days: a cursor older than that is 410 (start again without ` +
          '`after`, after re-reading your records). **Credits: a page holding at least one event costs 1 ' +
          'data credit; an empty page costs none** (`request.credit_used_this_request` says which). ' +
          'An empty page is answered also when the period’s credits are spent; a page with events is then 402.',
        security: [{ http_api_key: [] }],
        querystring: EventsQuery,
        response: eventsResponses,
      },
    },
    async (request, reply) => {
      const { after = null, limit, types, watch, wait } = request.query;
      const filter: EventFilter = {};
      if (types !== undefined) filter.types = expandTypes(listOf('types', types));
      if (watch !== undefined) filter.orgIds = await resolveWatch(app.db, listOf('watch', watch), suffix);
      const read = (cursor: string | null) =>
        readEvents(app.db, cursor, limit, filter, {
          domainSuffix: suffix,
          retentionDays: app.config.eventsRetentionDays,
        });
      let mark = waiter.mark;
      let page = await read(after);
      if (wait > 0 && page.events.length === 0 && !page.has_more) {
        // The key, rate limit and account are checked before waiting, not after.
        await request.creditReserved();
        const gone = new AbortController();
        const onClose = () => gone.abort();
        reply.raw.once('close', onClose);
        const deadline = Date.now() + wait * 1000;
        try {
          while (Date.now() < deadline && !gone.signal.aborted && !waiter.closed) {
            await waiter.wait(mark, deadline - Date.now(), gone.signal);
            mark = waiter.mark;
            page = await read(page.next_cursor ?? after);
            if (page.events.length > 0 || page.has_more) break;
          }
        } finally {
          reply.raw.off('close', onClose);
        }
      }
      const meta = page.events.length > 0 ? await request.settleCredit() : await request.settleFree();
      return { ...page, request: meta };
    },
  );
};
