import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import fp from 'fastify-plugin';

/** The OpenAPI document is generated from the route schemas: `/openapi.json`, browsable at `/docs`. */
export const swaggerPlugin = fp(
  async (app) => {
    await app.register(swagger, {
      openapi: {
        openapi: '3.0.3',
        info: {
          title: 'bizdir Business Directory API',
          version: '1.0.0',
          description:
            'Orgs, Locations and private contacts. Every request carries `api_key`; every 200 carries a ' +
            '`request` object with data-credit usage (1 credit per 200; 402 once the period is spent). ' +
            'Errors are `{code, message}`. Pagination: `limit` 1-100 (default 20), `offset` >= 0, ' +
            '`offset + limit` <= 10000.',
        },
        components: {
          securitySchemes: { http_api_key: { type: 'apiKey', in: 'query', name: 'api_key' } },
        },
      },
    });
    await app.register(async (docs) => {
      // The UI's redirects repeat the request's URL, query string and so any api_key included (and
      // `/docs/static/index.html?x` to itself): they keep the path only.
      docs.addHook('onSend', async (_request, reply, payload) => {
        const location = reply.getHeader('location');
        if (typeof location === 'string' && location.includes('?')) {
          reply.header('location', location.slice(0, location.indexOf('?')));
        }
        return payload;
      });
      await docs.register(swaggerUi, { routePrefix: '/docs' });
    });
    app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  },
  { name: 'bizdir-swagger' },
);
