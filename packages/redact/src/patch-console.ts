import { compileDeepRedactor, type RedactDeepOptions } from "./redact-deep.js";
import { RedactOptionsError } from "./redact-error.js";

/** Options of `patchConsole`. */
export interface PatchConsoleOptions extends RedactDeepOptions {
  /** The console to patch. Defaults to the global `console`. */
  console?: Console;
  /** Which methods to wrap. Defaults to log, info, warn, error, debug and trace. */
  methods?: readonly ("log" | "info" | "warn" | "error" | "debug" | "trace" | "dir")[];
}

const DEFAULT_METHODS = ["log", "info", "warn", "error", "debug", "trace"] as const;
const KNOWN_METHODS: ReadonlySet<unknown> = new Set([...DEFAULT_METHODS, "dir"]);

/**
 * Wraps console methods so that every argument is redacted before it is printed (strings as
 * text, objects deeply), and returns a function that puts the original methods back.
 *
 * How it fails: invalid options throw `RedactOptionsError`; undo is safe to call twice and
 * leaves alone a method that someone else replaced after the patch.
 *
 * @example
 * const undo = patchConsole();
 * console.log("card", "4111 1111 1111 1111"); // card [CREDIT_CARD]
 * undo();
 */
export function patchConsole(options: PatchConsoleOptions = {}): () => void {
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new RedactOptionsError(
      '[redact] patchConsole: options must be an object such as { methods: ["log", "error"] }.',
    );
  }
  const {
    console: target = globalThis.console,
    methods = DEFAULT_METHODS,
    ...redactOptions
  } = options;
  if (typeof target !== "object" || target === null) {
    throw new RedactOptionsError("[redact] patchConsole: console must be a Console object.");
  }
  if (!Array.isArray(methods)) {
    throw new RedactOptionsError(
      `[redact] patchConsole: methods must be an array of console method names such as ["log", "error"]; got ${typeof methods}.`,
    );
  }
  const record = target as unknown as Record<string, unknown>;
  // Check every method before patching any, so invalid options leave the console as it was.
  for (const method of methods) {
    if (!KNOWN_METHODS.has(method)) {
      throw new RedactOptionsError(
        `[redact] patchConsole: unknown method ${JSON.stringify(method)}; use ${[...KNOWN_METHODS].join(", ")}.`,
      );
    }
    if (typeof record[method] !== "function") {
      throw new RedactOptionsError(
        `[redact] patchConsole: console.${method} is not a function; pick methods the console has.`,
      );
    }
  }
  const deep = compileDeepRedactor(redactOptions, "patchConsole");
  const patched = new Map<
    string,
    { original: (...args: unknown[]) => void; wrapper: (...args: unknown[]) => void }
  >();
  for (const method of methods) {
    const original = record[method];
    const wrapper = (...args: unknown[]) => {
      (original as (...args: unknown[]) => void).apply(
        target,
        args.map((argument) => deep(argument)),
      );
    };
    patched.set(method, { original: original as (...args: unknown[]) => void, wrapper });
    record[method] = wrapper;
  }
  return () => {
    for (const [method, { original, wrapper }] of patched) {
      if (record[method] === wrapper) record[method] = original;
    }
    patched.clear();
  };
}
