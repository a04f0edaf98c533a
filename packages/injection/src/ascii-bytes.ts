/**
 * Reading ASCII text as bytes: V8 reads a typed array two to three times faster than
 * `charCodeAt`, and `TextEncoder.encodeInto` copies ASCII text at memory speed, so the
 * scanner's character loops run over bytes whenever the text is ASCII.
 */

const encoder = new TextEncoder();

/** Gives the bytes of ASCII text in a buffer it reuses; `undefined` for any other text. @internal */
export type AsciiReader = (text: string) => Uint8Array | undefined;

/**
 * Creates a reader with its own buffer. The view it returns is valid until its next call, so
 * each module keeps its own reader.
 *
 * @example
 * const read = createAsciiReader();
 * read("abc"); // Uint8Array [97, 98, 99]
 * read("été"); // undefined
 */
export function createAsciiReader(): AsciiReader {
  let buffer = new Uint8Array(1024);
  return (text) => {
    const length = text.length;
    // UTF-8 of a non-ASCII character takes two bytes or more, so it needs more than `length`.
    if (buffer.length < length + 4)
      buffer = new Uint8Array(Math.max(length + 4, buffer.length * 2));
    const { read, written } = encoder.encodeInto(text, buffer);
    return read === length && written === length ? buffer.subarray(0, length) : undefined;
  };
}

/** Gives the UTF-16 units of any text in a buffer it reuses. @internal */
export type UnitReader = (text: string) => Uint16Array;

/**
 * Creates a reader of UTF-16 units with its own buffer (valid until its next call): for text
 * that is not ASCII, a typed array is still faster to loop over than `charCodeAt`.
 *
 * @example
 * createUnitReader()("é!"); // Uint16Array [233, 33]
 */
export function createUnitReader(): UnitReader {
  let buffer = Buffer.alloc(2048);
  return (text) => {
    if (buffer.length < text.length * 2)
      buffer = Buffer.alloc(Math.max(text.length * 2, buffer.length * 2));
    const written = buffer.write(text, 0, "utf16le");
    return new Uint16Array(buffer.buffer, buffer.byteOffset, written / 2);
  };
}
