import { loadConfig } from '../../shared/config.js';
import { createLogger } from '../../shared/logger.js';

// Writes one log line the way every bizdir command does (LOG_FORMAT, LOG_LEVEL from the environment);
// `2` as the argument: to stderr, as `bizdir start` does. Used by test/logger.test.ts.
const fd = process.argv[2] === '2' ? 2 : 1;
const log = createLogger(loadConfig(), { service: 'probe' }, undefined, fd);
log.info({ api_key: 'bzk_secret', answer: 42 }, 'probe line');
log.debug('debug line');
