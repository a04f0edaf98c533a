import { compileDeepRedactor, type RedactDeepOptions } from "./redact-deep.js";

/**
 * A plain redaction hook: give it any value (a string, a span's attributes, an event, a log
 * record) and get back a redacted copy. This is the shape loopguard core calls for every
 * span, event and log line of a run; it has no loopguard dependency.
 */
export type Redactor = (value: unknown) => unknown;

/** Options of `createRedactor`: the same as `redactDeep`. */
export type CreateRedactorOptions = RedactDeepOptions;

/**
 * Creates a `Redactor` with its detectors compiled once: strings are redacted as text, every
 * other value deeply (see `redactDeep`). With `placeholder: "indexed"` and a `scope` (such
 * as a vault), tokens stay stable across calls.
 *
 * How it fails: invalid options throw `RedactOptionsError` here, at creation, never later.
 *
 * @example
 * const redactor = createRedactor({ sensitiveKeys: ["x-session"] });
 * redactor("card 4111 1111 1111 1111"); // "card [CREDIT_CARD]"
 * redactor({ password: "hunter2", note: "call +1 415 555 0132" });
 * // { password: "[SECRET]", note: "call [PHONE]" }
 */
export function createRedactor(options?: CreateRedactorOptions): Redactor {
  const deep = compileDeepRedactor(options, "createRedactor");
  return (value: unknown) => deep(value);
}
