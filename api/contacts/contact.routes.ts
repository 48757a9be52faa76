import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import Type from 'typebox';
import { ApiKeyQuery, ErrorSchema, meteredErrors, RequestMetaSchema } from '../http/common.schema.js';
import { normalizeContact } from './contact.normalize.js';
import { findContactIdByEmail, insertContactIfNew } from './contact.repository.js';
import { ContactBodySchema, ContactResultSchema } from './contact.schema.js';

/** docs/decisions.md, Contacts: a contact body is at most 16 KiB. */
export const CONTACT_BODY_LIMIT = 16 * 1024;

export const contactRoutes: FastifyPluginAsync = async (root) => {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();

  app.post(
    '/v1/contact',
    {
      config: { metered: true },
      bodyLimit: CONTACT_BODY_LIMIT,
      schema: {
        tags: ['contacts'],
        summary: 'Create a private contact (an email the account already has creates nothing)',
        security: [{ http_api_key: [] }],
        querystring: Type.Object(ApiKeyQuery),
        body: ContactBodySchema,
        response: {
          200: Type.Object({ contact: ContactResultSchema, request: RequestMetaSchema }),
          ...meteredErrors,
          413: ErrorSchema,
          415: ErrorSchema,
        },
      },
    },
    async (request) => {
      const contact = normalizeContact(request.body);
      // A write: only once the credit is held, so a spent account creates nothing.
      await request.creditReserved();
      const accountId = request.principal!.accountId;
      const inserted = await insertContactIfNew(app.db, accountId, contact);
      let result: { created: boolean; id: string };
      if (inserted) result = { created: true, id: inserted.uid };
      else {
        // The email was taken: by the insert's own conflict, so the row exists (contacts are never deleted).
        const existing = await findContactIdByEmail(app.db, accountId, contact.emailKey!);
        result = { created: false, id: existing!.uid };
      }
      return { contact: result, request: await request.settleCredit() };
    },
  );
};
