import fp from 'fastify-plugin';
import { classifyError, errorBody } from './error-mapping.js';

/**
 * One error handler: every non-200 is `{code, message}` (DECISIONS.md, Errors) and nothing internal
 * reaches the client. A path that exists under another method answers 405 with `Allow`, any other
 * unknown route 404.
 */
export const errorsPlugin = fp(
  async (app) => {
    const routes: { pattern: RegExp; method: string }[] = [];
    app.addHook('onRoute', (route) => {
      const source = route.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z0-9_]+/g, '[^/]+');
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      for (const method of methods) routes.push({ pattern: new RegExp(`^${source}/?$`), method });
    });

    app.setErrorHandler((error, request, reply) => {
      const { status, reason, internal } = classifyError(error);
      if (internal) request.log.error({ err: error }, 'request failed');
      return reply.code(status).type('application/json').send(errorBody(status, reason));
    });

    app.setNotFoundHandler((request, reply) => {
      const path = request.url.split('?')[0] ?? '/';
      const allowed = [...new Set(routes.filter((r) => r.pattern.test(path)).map((r) => r.method))];
      if (allowed.length > 0) {
        return reply
          .code(405)
          .header('allow', allowed.join(', '))
          .send(errorBody(405, `${request.method} is not allowed here; use ${allowed.join(' or ')}`));
      }
      return reply.code(404).send(errorBody(404, 'No route matches this path'));
    });
  },
  { name: 'bizdir-errors' },
);
