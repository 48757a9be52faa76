/** The raw material of the API fuzz test's requests (fuzz-requests.ts): values known to hurt. */

/** Values Postgres, Meilisearch, the router or a parser could choke on. Decoded text, encoded below. */
export const HOSTILE = [
  ...['', ' ', '  ', '\t', '\r\n', '\u0000', 'a\u0000b', '\ud800', '\udfff', 'a\ud800b', '\udc00\ud800'],
  ...['\u202eevil\u202c', 'שלום עולם', 'مرحبا', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢', '😀', '👩‍👩‍👧‍👦', 'ǅ', 'İ', 'ß', 'ﬀ', 'Ａ'],
  ...['\ufeff', '\uffff', '\u00a0', '\u0085', '\u2028', 'e\u0301', 'é', 'WIDGÉTRY'],
  ...['../../etc/passwd', '..\\..\\windows\\win.ini', '/', '//', '.', '..', '%', '?', '#', '&', '=', '+'],
  ...["' OR '1'='1", "'; drop table orgs; --", '" OR 1=1 --', 's STARTS WITH "a"', 'name = "x" OR id > 0'],
  ...['a" OR "b', '\\', '`id`', '$(id)', '$' + '{7*7}', '{{7*7}}', '<script>alert(1)</script>', '^x0;', '*'],
  ...['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty'],
  ...['null', 'undefined', 'true', 'false', 'NaN', 'Infinity', '-Infinity', '[]', '{}', '[object Object]'],
  ...['0', '-0', '-1', '1', '20', '100', '101', '9950', '10000', '10001', '1e3', '1e309', '-1e309', '0x10'],
  ...['0b1', '1.5', '1,5', ' 1', '1 ', '+1', '01', '9007199254740993', '99999999999999999999999', '١٢٣'],
  ...['name', '-name', 'updated', '-updated', 'relevance', 'NAME', 'name,updated', 'ltd', ' ltd', 'acme'],
];

/** URL text inserted as is: broken or sneaky percent-encoding. */
export const RAW_URL_FRAGMENTS = [
  ...['%', '%%', '%zz', '%0', '%00', '%C0%AF', '%C0%80', '%ED%A0%80', '%ED%BF%BF', '%E0%A4%A', '%FF%FE'],
  ...['%F4%90%80%80', '%2F', '%2f..%2f', '..%2F..%2F', '%2e%2e%2f', '%252e%252e', '%5C', '%0D%0A', '%23'],
  ...['%3F', '%26api_key%3Dx', '%u0041', '%E2%80%AE', '+', ';', ';jsessionid=1', '/', '/./', '/../'],
];

/** Bodies no schema would produce. */
export const RAW_BODIES: (string | Buffer)[] = [
  ...['', ' ', '{', '}', '{"a":}', '{"full_name":"A B",}', '[', '[]', '"x"', 'null', 'true', '1', 'NaN'],
  ...['{"full_name":NaN}', '\ufeff{"full_name":"A B"}', "{'full_name':'A B'}", '{"full_name":"A B"}{"x":1}'],
  ...['{"full_name":"A B","full_name":"C D"}', '{"full_name":"\\ud800"}', '{"full_name":"\\u0000"}'],
  ...['{"full_name":"\\uZZZZ"}', '{"full_name":"A\\u0000B","email":"a@b.co"}'],
  '{"__proto__":{"polluted":"yes"},"full_name":"A B"}',
  '{"constructor":{"prototype":{"polluted":"yes"}},"full_name":"A B"}',
  `${'['.repeat(5_000)}${']'.repeat(5_000)}`,
  `${'{"a":'.repeat(2_000)}1${'}'.repeat(2_000)}`,
  `${'['.repeat(20_000)}${']'.repeat(20_000)}`,
  JSON.stringify({ full_name: 'x'.repeat(17_000) }),
  Buffer.from([0x7b, 0x22, 0x66, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc0, 0xaf, 0x22, 0x7d]),
  Buffer.from('{"full_name":"A B"}', 'utf16le'),
];

export const CONTENT_TYPES = [
  ...['application/json', 'application/json', 'application/json', 'application/json; charset=utf-8'],
  ...['APPLICATION/JSON', 'application/json; charset=latin1', 'application/json; charset=utf-16'],
  ...['application/json;;', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data'],
  ...['application/xml', 'application/vnd.api+json', 'application/json, text/plain', '*/*', 'json', ''],
];

export const METHODS = [
  'GET',
  'POST',
  'PUT',
  'DELETE',
  'PATCH',
  'OPTIONS',
  'HEAD',
  'TRACE',
  'PROPFIND',
  'FROB',
  'get',
];

/** Paths that are no route, or someone else's: traversal, doubled slashes, prefixes of real routes. */
export const ODD_PATHS = [
  ...['/', '/v1', '/v1/', '/v1/org', '/v1/org/', '/v1/location', '/v2/org/x', '//v1/org/search', '/v1//org'],
  ...['/v1/org/search/', '/v1/org/x/locations/extra', '/V1/ORG/SEARCH', '/openapi.json', '/docs', '/docs/'],
  ...['/docs/static/index.html', '/docs/static/', '/docs/json', '/metrics', '/admin/queues', '/healthz/'],
  ...['/v1/contact/', '/v1/org/search;x', '/./v1/org/search', '/v1/org/../org/search', '*'],
];

export const EXTRA_HEADERS: [string, string][] = [
  ['accept', 'application/xml'],
  ['accept-version', '2.0.0'],
  ['accept-encoding', 'gzip, br'],
  ['if-none-match', '"x"'],
  ['authorization', 'Bearer bzk_nothing'],
  ['x-request-id', '../../etc/passwd'],
  ['x-forwarded-for', '127.0.0.1, ::1'],
  ['host', ''],
  ['expect', '100-continue'],
  ['cookie', '__proto__=x'],
  ['x-big', 'b'.repeat(20_000)],
  ['content-length', '0'],
  ['transfer-encoding', 'chunked'],
];
