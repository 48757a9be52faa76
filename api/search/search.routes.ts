import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import fastJson from 'fast-json-stringify';
import type { FastifyPluginAsync } from 'fastify';
import Type, { type Static } from 'typebox';
import { ensureOrgIndex, IndexOutdatedError } from '../../search/index-definition.js';
import {
  createMeiliClient,
  INDEXING_TIMEOUT_MS,
  isIndexNotReady,
  meiliConnectionOf,
  SearchUnavailableError,
} from '../../search/meili-client.js';
import { ReplicaPicker } from '../../search/replica-picker.js';
import { meiliReplicasOf } from '../../search/replicas.js';
import { MAX_Q_LENGTH, ORG_SORTS, type OrgSort } from '../../search/search-query.js';
import { searchOrgs } from '../../search/search-service.js';
import { SearchTiming } from '../../search/search-timing.js';
import { badRequest, serviceUnavailable } from '../../shared/errors.js';
import { reasonOf } from '../../shared/outage.js';
import {
  ApiKeyQuery,
  CONDITIONAL_READ,
  meteredErrors,
  NotModifiedSchema,
  RequestMetaSchema,
  withEtag,
} from '../http/common.schema.js';
import { sendRendered } from '../http/conditional.js';
import { checkWindow, PaginationQuery } from '../http/pagination.js';
import { carriesAdminToken } from '../ops/admin-auth.js';
import { prepareOrgsByIds } from '../orgs/org.read-model.js';
import { OrgSchema } from '../orgs/org.schema.js';
import { toOrgView } from '../orgs/org.view.js';
import { rendered } from '../records/rendered.view.js';

const SORT_LIST = ORG_SORTS.join(', ');

const OrgsListSchema = Type.Object(
  {
    total: Type.Integer({ description: 'Exact number of matching Orgs, whatever the page.' }),
    results: Type.Array(OrgSchema),
  },
  { title: 'OrgsList' },
);

const serializeOrgsList = fastJson(OrgsListSchema as object) as (
  list: Static<typeof OrgsListSchema>,
) => string;

const isSort = (value: string): value is OrgSort => (ORG_SORTS as readonly string[]).includes(value);

/**
 * GET /v1/org/search: Meilisearch finds the ids and their order (search/search-service.ts), Postgres
 * supplies the Orgs through the same read model as GET /v1/org/{domain}, so a result is never staler
 * than the database. An unreachable Meilisearch answers 503 within the query timeout. What a client
 * sees (errors, headers, the OpenAPI text) names no component: "search index", "database".
 */
export const searchRoutes: FastifyPluginAsync = async (root) => {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const config = app.config;
  const meili = createMeiliClient(meiliConnectionOf(config));
  // Several replicas (MEILI_URL lists them): each search asks one in turn (search/replica-picker.ts).
  const replicas = meiliReplicasOf(config);
  const picker = replicas.length > 1 ? new ReplicaPicker(replicas) : undefined;
  const indexUid = config.meiliIndex;
  const orgsByIds = prepareOrgsByIds(app.db);

  // An index of an older format answers 503 until `bizdir reindex`: said once in the log (at start-up
  // or at the first search that meets it), and again if it comes back after a search got through.
  let olderLogged = false;
  const logOlder = () => {
    if (olderLogged) return;
    olderLogged = true;
    app.log.warn({ index: indexUid }, new IndexOutdatedError(indexUid).message);
  };

  // Settings are applied at start-up, without waiting for it: a Meilisearch that is not up yet must
  // not stop the API (its failure is logged here, and searches answer 503 meanwhile).
  app.addHook('onReady', async () => {
    for (const replica of replicas) {
      ensureOrgIndex(createMeiliClient(replica.conn, INDEXING_TIMEOUT_MS), indexUid).then(
        (state) => {
          if (state === 'older') logOlder();
        },
        (err: unknown) =>
          app.log.warn(
            { err: reasonOf(err), ...(picker ? { replica: replica.label } : {}) },
            'search index settings not applied (Meilisearch unreachable?)',
          ),
      );
    }
  });

  app.get(
    '/v1/org/search',
    {
      config: { metered: true, conditional: true },
      schema: {
        tags: ['orgs'],
        summary: 'Search Orgs by name (substring, case-insensitive) or exact domain',
        description:
          'An Org matches when its name contains `q` (case-insensitive; accents are significant), or when ' +
          '`q` equals one of its domains (stable or public, including earlier public domains). Results are ' +
          'full Org objects as returned by GET /v1/org/{domain}. `total` is the exact number of matches. ' +
          'A 200 carries a `Server-Timing` header: `db` (database reads), `search` (time with a search ' +
          'index call in flight) and `total`, in ms. ' +
          CONDITIONAL_READ,
        security: [{ http_api_key: [] }],
        querystring: Type.Object({
          ...ApiKeyQuery,
          q: Type.Optional(
            Type.String({
              maxLength: MAX_Q_LENGTH,
              description: `Search term, at most ${MAX_Q_LENGTH} characters. Missing or empty: every Org.`,
            }),
          ),
          sort: Type.Optional(
            Type.String({
              default: 'name',
              description:
                'Order: `name` (A to Z, default), `-name` (Z to A), `updated` (oldest first), `-updated` ' +
                '(newest first), `relevance` (exact domain or whole name, then name prefix, then word ' +
                'prefix, then anywhere). Ties break by stable domain.',
              examples: [...ORG_SORTS],
            }),
          ),
          ...PaginationQuery,
        }),
        response: {
          200: withEtag(Type.Object({ orgs: OrgsListSchema, request: RequestMetaSchema })),
          304: NotModifiedSchema,
          ...meteredErrors,
        },
      },
    },
    async (request, reply) => {
      const { q = '', sort = 'name', limit, offset } = request.query;
      if (!isSort(sort)) throw badRequest(`sort must be one of ${SORT_LIST}`);
      checkWindow(limit, offset);
      const timing = new SearchTiming();
      let exact = true;
      const answer = async () => {
        let page: Awaited<ReturnType<typeof searchOrgs>>;
        try {
          page = await searchOrgs(
            {
              db: app.db,
              meili,
              indexUid,
              domainSuffix: config.domainSuffix,
              timing,
              ...(picker ? { replicas: picker } : {}),
            },
            { q, sort, limit, offset },
          );
          app.outages.meilisearch.up();
          olderLogged = false;
        } catch (error) {
          if (error instanceof IndexOutdatedError) {
            logOlder();
            throw serviceUnavailable(
              'Search is unavailable until the search index is rebuilt: the operator must run `bizdir reindex`',
            );
          }
          if (error instanceof SearchUnavailableError) {
            // Logged once per outage, with its end (infra plugin), not once per 503.
            app.outages.meilisearch.down(error);
            throw serviceUnavailable('Search is temporarily unavailable');
          }
          if (isIndexNotReady(error)) {
            app.outages.meilisearch.down(error);
            throw serviceUnavailable('Search is temporarily unavailable: the search index is not ready');
          }
          throw error;
        }
        exact = page.catchingUp !== true;
        const orgs = await timing.db(() => orgsByIds(app.pool, page.ids));
        const results = orgs.map((o) => toOrgView(o, config.domainSuffix));
        // A list GET: its ETag is a hash of the page as sent (the same bytes Fastify would write), so a
        // client polling a search gets a free 304 until the page changes.
        return rendered(serializeOrgsList({ total: page.total, results }));
      };
      // With SEARCH_ANSWER_CACHE=on, a repeated search is answered from the record cache while no
      // record has changed since its answer was computed: an exact answer is a function of the records
      // alone, so it can never be stale (record-cache.ts). An answer from an index still catching up
      // is not kept.
      const list = config.searchAnswerCache
        ? await app.records.searchAnswer(
            `${sort}\u0000${offset}\u0000${limit}\u0000${q}`,
            answer,
            () => exact,
          )
        : await answer();
      // Where this answer's time went (search/search-timing.ts), under names that tell a client
      // nothing of the stack; the detailed account only to the operator's admin token.
      const detailed = config.adminToken !== undefined && carriesAdminToken(request, config.adminToken);
      reply.header(
        'server-timing',
        detailed ? timing.detailedHeader(reply.elapsedTime) : timing.header(reply.elapsedTime),
      );
      return sendRendered(request, reply, 'orgs', list);
    },
  );
};
