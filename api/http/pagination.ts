import Type from 'typebox';
import { badRequest } from '../../shared/errors.js';

/** docs/decisions.md, Pagination: limit 1-100 (20), offset >= 0 (0), offset + limit <= 10,000. */
export const MAX_WINDOW = 10_000;

export const PaginationQuery = {
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Page size, 1-100.' }),
  offset: Type.Integer({ minimum: 0, default: 0, description: 'Records to skip; offset + limit <= 10000.' }),
};

export function checkWindow(limit: number, offset: number): void {
  if (offset + limit > MAX_WINDOW) throw badRequest(`offset + limit must be at most ${MAX_WINDOW}`);
}
