import { RedactOptionsError } from "./redact-error.js";
import { engineFor, type RedactOptions } from "./redaction-engine.js";
import { createRedactionScope } from "./redaction-scope.js";

/** Options of `createRedactionStream`. */
export interface RedactionStreamOptions extends RedactOptions {
  /**
   * How many characters to hold back at the end of each chunk, so a value split across
   * chunks is seen whole. Defaults to the longest span any detector can report (4096 with
   * the built-in SECRET detector). Lower it for less latency, at the risk of missing very
   * long tokens split across chunks.
   */
  holdBack?: number;
  /**
   * The most characters held at once while an open-ended value (a private key with no END
   * line yet) waits for its end. Past it the held text is redacted and written. Defaults to
   * 1 MiB.
   */
  maxBuffer?: number;
}

function isSpaceCode(code: number): boolean {
  return code === 32 || code === 10 || code === 13 || code === 9;
}

/**
 * Creates a web `TransformStream<string, string>` that redacts text as it flows, such as a
 * model's streamed answer or a log stream. It holds back the tail of each chunk until it
 * knows no value there can grow, so a secret split across chunk boundaries is still caught.
 * With `placeholder: "indexed"` the tokens are stable for the whole stream.
 *
 * How it fails: invalid options throw `RedactOptionsError`; a detector error errors the
 * stream (nothing unredacted is written).
 *
 * @example
 * const response = await fetch(url);
 * const redacted = response.body!
 *   .pipeThrough(new TextDecoderStream())
 *   .pipeThrough(createRedactionStream());
 */
export function createRedactionStream(
  options?: RedactionStreamOptions,
): TransformStream<string, string> {
  const engine = engineFor(options, "createRedactionStream", ["holdBack", "maxBuffer"]);
  const { holdBack: givenHoldBack, maxBuffer: givenMaxBuffer } = options ?? {};
  if (givenHoldBack !== undefined && !(Number.isInteger(givenHoldBack) && givenHoldBack >= 1)) {
    throw new RedactOptionsError(
      `[redact] createRedactionStream: holdBack must be a positive integer; got ${String(givenHoldBack)}.`,
    );
  }
  if (givenMaxBuffer !== undefined && !(Number.isInteger(givenMaxBuffer) && givenMaxBuffer >= 1)) {
    throw new RedactOptionsError(
      `[redact] createRedactionStream: maxBuffer must be a positive integer; got ${String(givenMaxBuffer)}.`,
    );
  }
  const holdBack = givenHoldBack ?? engine.maxLength;
  const maxBuffer = Math.max(givenMaxBuffer ?? 1024 * 1024, holdBack * 2);
  const scope =
    engine.scope ?? (engine.placeholder === "indexed" ? createRedactionScope() : undefined);
  let buffer = "";

  return new TransformStream<string, string>({
    transform(chunk, controller) {
      if (typeof chunk !== "string") {
        throw new RedactOptionsError(
          "[redact] the redaction stream takes strings; pipe bytes through a TextDecoderStream first.",
        );
      }
      buffer += chunk;
      if (buffer.length <= holdBack) return;
      const findings = engine.find(buffer);
      let cut = buffer.length - holdBack;
      // Prefer to cut at whitespace, so no word is split between two scans.
      for (let index = cut, floor = Math.max(0, cut - 256); index > floor; index--) {
        if (isSpaceCode(buffer.charCodeAt(index - 1))) {
          cut = index;
          break;
        }
      }
      // Never cut through a finding: it goes out whole in a later chunk. A finding that
      // reaches the end of the buffer may still grow (a private key awaiting its END line).
      for (const finding of findings) {
        if (finding.start < cut && (finding.end > cut || finding.end === buffer.length)) {
          cut = finding.start;
          break;
        }
      }
      if (cut <= 0) {
        if (buffer.length <= maxBuffer) return;
        cut = buffer.length; // fail closed: redact everything held, open-ended findings included
      }
      const emitted = findings.filter((finding) => finding.end <= cut || cut === buffer.length);
      const head = buffer.slice(0, cut);
      const clipped = emitted.map((finding) => ({ ...finding, end: Math.min(finding.end, cut) }));
      controller.enqueue(engine.apply(head, clipped, scope));
      buffer = buffer.slice(cut);
    },
    flush(controller) {
      if (buffer.length > 0) controller.enqueue(engine.redact(buffer, scope).text);
      buffer = "";
    },
  });
}
