import { RedactOptionsError } from "./redact-error.js";
import { engineFor, type RedactOptions, type RedactResult } from "./redaction-engine.js";

/**
 * Redacts PII and secrets in a text: returns the text with each finding replaced by a
 * placeholder (`[EMAIL]`, or `<EMAIL_1>` with `placeholder: "indexed"`) and the findings with
 * their spans in the original text.
 *
 * How it fails: it throws `RedactOptionsError` for invalid options and `RedactError` when a
 * custom detector breaks its contract; it never returns unredacted text on error.
 *
 * @example
 * const { text, findings } = redact("Mail jane@acme.io, card 4111 1111 1111 1111");
 * // text: "Mail [EMAIL], card [CREDIT_CARD]"
 * // findings: [{ type: "EMAIL", start: 5, end: 17, rule: "email" }, …]
 */
export function redact(text: string, options?: RedactOptions): RedactResult {
  if (typeof text !== "string") {
    throw new RedactOptionsError(
      `[redact] redact(text) takes a string; got ${text === null ? "null" : typeof text}. Use redactDeep for other values.`,
    );
  }
  return engineFor(options, "redact").redact(text);
}
