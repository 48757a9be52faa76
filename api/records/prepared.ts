import type { Compilable } from 'kysely';
import type pg from 'pg';

/** A bind value standing for the named argument `name` while a query is compiled. */
export const arg = (name: string) => `{bizdir-arg:${name}}`;
const ARG = /^\{bizdir-arg:(.+)\}$/;

/**
 * A read-model query built once with Kysely and run as a named prepared statement: Postgres parses
 * and plans it once per connection instead of once per request, and planning cost the Org query more
 * than running it (docs/journal/2026-11-23.md, 20:01); and no query is built in JavaScript per
 * request. Arguments are bound by name: compile the query with `arg('x')` where the
 * value goes, then `run(pool, { x })`.
 */
export class PreparedQuery<R> {
  private readonly text: string;
  private readonly template: readonly unknown[];

  constructor(
    private readonly name: string,
    query: Compilable<R>,
  ) {
    const compiled = query.compile();
    this.text = compiled.sql;
    this.template = compiled.parameters;
  }

  async run(pool: pg.Pool, args: Record<string, unknown>): Promise<R[]> {
    const values = this.template.map((p) => {
      const m = typeof p === 'string' ? ARG.exec(p) : null;
      if (!m) return p;
      if (!(m[1]! in args)) throw new Error(`${this.name}: no value for ${m[1]}`);
      return args[m[1]!];
    });
    const result = await pool.query({ name: this.name, text: this.text, values });
    return result.rows as R[];
  }

  async first(pool: pg.Pool, args: Record<string, unknown>): Promise<R | undefined> {
    return (await this.run(pool, args))[0];
  }
}
