import type { ImportOptionsJson } from '../../shared/tables.js';
import { openCsv } from '../csv.js';
import type { FeedConfig, FeedHandler } from '../feed-handler.js';
import type { PartSource } from '../import-runs/import-runs.state.js';
import { openSource } from '../source.js';

/**
 * Opens a part's source and reads its header as readSource does, then lets it go: throws
 * FeedFormatError or SourceError when the file is not the feed's format (another CSV, an empty file,
 * a zip without CSV text). `bizdir import` asks this of local files before it records a run.
 */
export async function checkPartHeader(
  handler: FeedHandler,
  part: PartSource,
  options: ImportOptionsJson,
  config: FeedConfig,
): Promise<void> {
  const source = await openSource(part.source, part.entry === null ? {} : { entry: part.entry });
  try {
    const csv = await openCsv(source.stream, { deferFields: handler.recognizesRows === true });
    handler.prepare(csv.header, options, csv.headerRaw, config);
  } finally {
    await source.close();
  }
}
