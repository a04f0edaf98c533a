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
