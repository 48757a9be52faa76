import { isUtf8 } from 'node:buffer';

/** UTF-8 at the edges of a CSV reading's chunks (csv-records.ts): where to cut, and which lines are not UTF-8. */

/**
 * How many bytes at the end of `bytes` begin a character that the next chunk finishes (0-3). Cutting
 * the input there, before a lead byte, decodes each piece to the same text as the whole would.
 */
export function unfinishedTail(bytes: Buffer): number {
  const n = bytes.length;
  for (let k = 1; k <= 3 && k <= n; k++) {
    const b = bytes[n - k]!;
    if (b < 0x80) return 0;
    if (b >= 0xc0) return (b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : 2) > k ? k : 0;
  }
  return 0;
}

/**
 * Where in `text` (`bytes` decoded) the lines, or parts of lines, whose bytes are not valid UTF-8
 * begin. Only called for a piece that is not valid as a whole (a file that is valid UTF-8 never
 * comes here, whatever characters it holds, U+FFFD included). An LF byte is always the character
 * LF (the decoder never swallows it into a U+FFFD), so the n-th line of the bytes is the n-th line of
 * the text; each line's bytes are checked on their own.
 */
export function badLines(bytes: Buffer, text: string): number[] {
  const found: number[] = [];
  let b = 0;
  let c = 0;
  for (;;) {
    const lf = bytes.indexOf(10, b);
    if (!isUtf8(bytes.subarray(b, lf < 0 ? bytes.length : lf))) found.push(c);
    if (lf < 0) return found;
    b = lf + 1;
    c = text.indexOf('\n', c) + 1;
  }
}
