import { Ajv } from 'ajv';
import formatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';

// ajv-formats is CommonJS (module.exports is the plugin); NodeNext types it as a namespace.
const addFormats = formatsModule as unknown as (ajv: Ajv) => Ajv;

function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({
    // Bodies are JSON and keep their types: `"1"` is not a number, and unknown fields are errors,
    // not silently dropped. Query strings and paths are text, so they are coerced.
    coerceTypes: coerce ? 'array' : false,
    removeAdditional: false,
    useDefaults: true,
    allErrors: false,
    // parentSchema on errors lets the error handler say "limit must be an integer between 1 and 100".
    verbose: true,
    strict: false,
  });
  addFormats(ajv);
  return ajv;
}

/** Fastify validator compiler: strict for bodies, coercing for querystring, params and headers. */
export function validatorCompiler(): FastifySchemaCompiler<unknown> {
  const strict = makeAjv(false);
  const coercing = makeAjv(true);
  return ({ schema, httpPart }) => (httpPart === 'body' ? strict : coercing).compile(schema as object);
}
