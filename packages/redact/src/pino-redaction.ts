import { compileDeepRedactor, type RedactDeepOptions } from "./redact-deep.js";
import { redactLine } from "./redact-line.js";

/** The part of pino's options that `pinoRedaction` returns. */
export interface PinoRedactionOptions {
  hooks: {
    /** Redacts each serialised line before pino writes it. */
    streamWrite(line: string): string;
  };
}

/**
 * Pino options that redact every line a logger writes: the message, the merged object,
 * child bindings, mixins and serializer output alike, because the hook sees the final
 * line. JSON lines are parsed and redacted deeply, so sensitive keys are honoured and the
 * output stays valid JSON. No pino import: spread the result into your pino options.
 *
 * How it fails: it never throws while logging for odd input; invalid options throw
 * `RedactOptionsError` when you call it.
 *
 * @example
 * import pino from "pino";
 * const logger = pino({ ...pinoRedaction() });
 * logger.info({ user: "jane@acme.io", password: "hunter2" }, "login from 10.0.0.7");
 * // {"level":30,…,"user":"[EMAIL]","password":"[SECRET]","msg":"login from [IP_ADDRESS]"}
 */
export function pinoRedaction(options?: RedactDeepOptions): PinoRedactionOptions {
  const deep = compileDeepRedactor(options, "pinoRedaction");
  return {
    hooks: {
      streamWrite: (line: string) => redactLine(line, deep),
    },
  };
}
