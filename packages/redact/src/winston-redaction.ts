import { compileDeepRedactor, type RedactDeepOptions } from "./redact-deep.js";
import { redactLine } from "./redact-line.js";

/** The log entry a winston format receives and returns. */
export interface WinstonInfo {
  level: string;
  message: unknown;
  [key: string | symbol]: unknown;
}

/** A logform format: the object `winston.format.combine` accepts. */
export interface WinstonFormat {
  transform(info: WinstonInfo, options?: unknown): WinstonInfo;
}

const LEVEL = Symbol.for("level");
const MESSAGE = Symbol.for("message");

/**
 * A winston format that redacts each log entry: every string property deeply (the caller's
 * object is not mutated), values under sensitive keys whatever they hold, the `splat`
 * arguments, and the formatted `message` if an earlier format already wrote one. Put it
 * first in `format.combine`. No winston import.
 *
 * How it fails: invalid options throw `RedactOptionsError` when you call it; logging never
 * throws for odd input.
 *
 * @example
 * import winston from "winston";
 * const logger = winston.createLogger({
 *   format: winston.format.combine(redactFormat(), winston.format.json()),
 *   transports: [new winston.transports.Console()],
 * });
 */
export function redactFormat(options?: RedactDeepOptions): WinstonFormat {
  const deep = compileDeepRedactor(options, "redactFormat");
  return {
    transform(info) {
      const plain: Record<string, unknown> = {};
      for (const key of Object.keys(info)) plain[key] = info[key];
      const output = deep(plain) as WinstonInfo;
      // The level drives colours and filtering; it never holds personal data.
      if ("level" in info) output.level = info.level;
      for (const symbol of Object.getOwnPropertySymbols(info)) {
        const value = info[symbol];
        if (symbol === LEVEL) output[symbol] = value;
        else if (symbol === MESSAGE && typeof value === "string")
          output[symbol] = redactLine(value, deep);
        else output[symbol] = deep(value);
      }
      return output;
    },
  };
}
