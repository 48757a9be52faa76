import { Ajv } from 'ajv';
import formatsModule from 'ajv-formats';
import type { FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';

type FastifyValidationResult = ReturnType<FastifySchemaCompiler<unknown>>;

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

/**
 * A NUL or a lone UTF-16 surrogate (`\ud800` in JSON, `%ED%A0%80` in a URL). Postgres stores
 * neither (NUL is refused; a lone surrogate is refused in jsonb and silently becomes U+FFFD in text),
 * so both are refused at the edge instead of failing deep inside a query.
 * With the `u` flag a well-formed surrogate pair is one code point and does not match.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is one of the characters looked for.
const UNSTORABLE = /[\u0000\uD800-\uDFFF]/u;

/** The first string value (at any depth) holding an unstorable character, as an Ajv-style error. */
export function findUnstorableText(value: unknown, path = ''): FastifySchemaValidationError | null {
  if (typeof value === 'string') {
    return UNSTORABLE.test(value)
      ? {
          instancePath: path,
          keyword: 'text',
          schemaPath: '',
          params: {},
          message: 'must not contain NUL or unpaired surrogate characters',
        }
      : null;
  }
  if (value === null || typeof value !== 'object') return null;
  for (const [key, item] of Object.entries(value)) {
    const issue = findUnstorableText(item, `${path}/${key}`);
    if (issue) return issue;
  }
  return null;
}

interface IntegerField {
  name: string;
  schema: object;
}

/** The top-level properties of a query, path or header schema that are integers. */
function integerFields(schema: unknown): IntegerField[] {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {};
  return Object.entries(properties).flatMap(([name, s]) =>
    s.type === 'integer' ? [{ name, schema: s }] : [],
  );
}

/** Decimal digits, and a leading minus so that `-1` is told it is out of range rather than not a number. */
const PLAIN_INTEGER = /^-?[0-9]+$/;

/**
 * The first integer field whose text is not written as one: Ajv's coercion takes whatever JavaScript
 * reads as a number (`1e1`, `0x10`, ` 5 `, `10.0`, `+5`), and docs/decisions.md gives every
 * non-integer value 400. As an Ajv-style error of the field's own schema, so the message names its range.
 */
function notPlainInteger(
  data: unknown,
  fields: readonly IntegerField[],
): FastifySchemaValidationError | null {
  if (fields.length === 0 || data === null || typeof data !== 'object') return null;
  for (const { name, schema } of fields) {
    const value = (data as Record<string, unknown>)[name];
    if (typeof value === 'string' && !PLAIN_INTEGER.test(value)) {
      return {
        instancePath: `/${name}`,
        keyword: 'type',
        schemaPath: '',
        params: { type: 'integer' },
        message: 'must be integer',
        parentSchema: schema,
      } as FastifySchemaValidationError;
    }
  }
  return null;
}

/**
 * Fastify validator compiler: strict for bodies, coercing for querystring, params and headers. Every
 * part a route gives a schema for is also checked for unstorable text (400 naming the field), so a
 * new route gets the check without doing anything.
 */
export function validatorCompiler(): FastifySchemaCompiler<unknown> {
  const strict = makeAjv(false);
  const coercing = makeAjv(true);
  return ({ schema, httpPart }) => {
    const schemaCheck = (httpPart === 'body' ? strict : coercing).compile(schema as object);
    const digitsOnly = httpPart === 'body' ? [] : integerFields(schema);
    const validate: FastifyValidationResult = (data: unknown) => {
      const notDigits = notPlainInteger(data, digitsOnly);
      if (notDigits) {
        validate.errors = [notDigits];
        return false;
      }
      if (!schemaCheck(data)) {
        validate.errors = schemaCheck.errors as FastifySchemaValidationError[] | null;
        return false;
      }
      const issue = findUnstorableText(data);
      validate.errors = issue ? [issue] : null;
      return issue === null;
    };
    return validate;
  };
}
