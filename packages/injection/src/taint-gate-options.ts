/**
 * The options of the taint gate, validated once when the gate is built: every bad value is an
 * `[injection]` error naming the option and what to pass instead.
 */
import type { RunView, ScanVerdict, ToolCall } from "@loopguard/core";
import { InvalidArgumentError } from "@loopguard/core";
import type { CountryCode } from "libphonenumber-js/min";
import { getCountries } from "libphonenumber-js/min";
import type { SinkTool, TaintSink } from "./taint-sinks.js";
import { type TaintKind, taintKinds } from "./taint-values.js";

/** Options of {@link taintGate}. */
export interface TaintGateOptions {
  /** Which outputs taint their values. */
  sources?: {
    /** Tool names or globs whose outputs can taint. Default every tool. */
    tools?: readonly string[];
    /** The lowest verdict that taints. Default `suspicious`. */
    minVerdict?: Exclude<ScanVerdict, "clean">;
  };
  /** Extra sinks besides tools marked `sensitive` (globs, optionally limited to arguments). */
  sinks?: readonly (string | TaintSink)[];
  /** Whether tools marked `sensitive: true` are sinks. Default `true`. */
  sensitiveTools?: boolean;
  /** What to do with a tainted call: refuse it (default) or ask a person. */
  onTaint?: "deny" | "ask";
  /** The kinds of value tracked. Default every kind. */
  kinds?: readonly TaintKind[];
  /**
   * Trusted text of the call's run (the user's task, the customer's record, ...): values found
   * in it are never tainted. Default: the run's task and the string values of `run.attributes`.
   */
  trusted?: (call: ToolCall) => readonly string[];
  /**
   * The envelope the agent wraps outputs in (`quarantine()`). With it, a flagged output that
   * carries `<flagged_span>` marks taints only the values inside them (segment-level taint), so
   * the customer's own order id elsewhere in a poisoned ticket stays usable. Without it, every
   * value of a flagged output is tainted: marks in text the gate cannot vouch for could be forged.
   */
  envelope?: { readonly tag: string; verify(text: string): boolean };
  /**
   * Taint what a tainted value implies: the domain (and parent domains) of a tainted address or
   * URL, the account number inside a tainted IBAN. Default `true`.
   */
  derive?: boolean;
  /**
   * Free-text argument names that detection taint does not check unless a sink names them in
   * `args` (a summary quoting a link or an amount from a flagged page is not a steered action).
   * Default `body`, `subject`, `reason`, `summary`, `message`, `note`, `notes`, `comment`,
   * `description`, `text`, `content`; `[]` checks every argument.
   */
  freeText?: readonly string[];
  /**
   * The agent's tools: with them, every sink's argument paths are checked against the tools'
   * input schemas at construction (a sink naming an argument the tool does not have is an
   * `[injection]` error instead of a check that never runs).
   */
  tools?: readonly SinkTool[];
  /**
   * The region national phone numbers (written without `+`) are read in, as an ISO 3166 code
   * (`GB`, `US`), for `phone` arguments and trusted text. Default none: only numbers with a
   * country code are phone numbers.
   */
  phoneCountry?: CountryCode;
  /** The gate's name in decision records. Default `taint`. */
  name?: string;
}

/** Free-text argument names detection taint skips unless a sink names them. */
export const defaultFreeText = [
  "body",
  "subject",
  "reason",
  "summary",
  "message",
  "note",
  "notes",
  "comment",
  "description",
  "text",
  "content",
];

/** Strings of a JSON-like value at any depth (iterative, no cap). */
function stringsOf(value: unknown, into: string[]): void {
  const stack: unknown[] = [value];
  const seen = new Set<object>();
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === "string") into.push(item);
    else if (item && typeof item === "object") {
      if (seen.has(item)) continue;
      seen.add(item);
      for (const child of Array.isArray(item) ? item : Object.values(item)) stack.push(child);
    }
  }
}

/** The run's trusted text by default: the string values of its attributes, and its task. */
export function attributeStrings(run: RunView | undefined): string[] {
  if (!run) return [];
  const strings: string[] = [];
  stringsOf(run.attributes, strings);
  // The user's own request is trusted: an order id the customer typed is not tainted because
  // a poisoned page repeats it.
  if (typeof run.task === "string") strings.push(run.task);
  return strings;
}

/** Validates the options that are not sinks; returns the settings the gate runs with. */
export function settingsOf(options: TaintGateOptions) {
  if (options === null || typeof options !== "object")
    throw new InvalidArgumentError("[injection] taintGate(options): options must be an object");
  const minVerdict = options.sources?.minVerdict ?? "suspicious";
  if (minVerdict !== "suspicious" && minVerdict !== "injection") {
    throw new InvalidArgumentError(
      `[injection] taintGate({ sources: { minVerdict } }): minVerdict must be "suspicious" or "injection", got ${JSON.stringify(minVerdict)}`,
    );
  }
  const onTaint = options.onTaint ?? "deny";
  if (onTaint !== "deny" && onTaint !== "ask")
    throw new InvalidArgumentError(
      `[injection] taintGate({ onTaint }): onTaint must be "deny" or "ask", got ${JSON.stringify(onTaint)}`,
    );
  const kinds = options.kinds ?? taintKinds;
  for (const kind of kinds) {
    if (!taintKinds.includes(kind))
      throw new InvalidArgumentError(
        `[injection] taintGate({ kinds }): unknown kind ${JSON.stringify(kind)}; use ${taintKinds.join(", ")}`,
      );
  }
  const sourceTools = options.sources?.tools;
  if (
    sourceTools !== undefined &&
    (!Array.isArray(sourceTools) || sourceTools.some((tool) => typeof tool !== "string"))
  ) {
    throw new InvalidArgumentError(
      "[injection] taintGate({ sources: { tools } }): tools must be an array of tool names or globs",
    );
  }
  if (options.trusted !== undefined && typeof options.trusted !== "function") {
    throw new InvalidArgumentError(
      "[injection] taintGate({ trusted }): trusted must be a function (call) => string[]",
    );
  }
  const envelopeTag = options.envelope?.tag;
  if (
    options.envelope !== undefined &&
    (typeof envelopeTag !== "string" || typeof options.envelope.verify !== "function")
  ) {
    throw new InvalidArgumentError(
      "[injection] taintGate({ envelope }): envelope must be the quarantine() envelope the agent uses",
    );
  }
  if (
    options.freeText !== undefined &&
    (!Array.isArray(options.freeText) || options.freeText.some((arg) => typeof arg !== "string"))
  )
    throw new InvalidArgumentError(
      "[injection] taintGate({ freeText }): freeText must be an array of argument names",
    );
  if (
    options.tools !== undefined &&
    (!Array.isArray(options.tools) ||
      options.tools.some((tool) => typeof tool?.name !== "string" || !tool.spec))
  )
    throw new InvalidArgumentError(
      "[injection] taintGate({ tools }): tools must be the agent's tools (from tool())",
    );
  if (
    options.phoneCountry !== undefined &&
    !(getCountries() as string[]).includes(options.phoneCountry)
  )
    throw new InvalidArgumentError(
      `[injection] taintGate({ phoneCountry }): ${JSON.stringify(options.phoneCountry)} is not an ISO 3166 region libphonenumber-js knows, e.g. "GB" or "US"`,
    );
  return { minVerdict, onTaint, kinds, sourceTools, envelopeTag };
}
