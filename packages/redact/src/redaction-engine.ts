import {
  BUILTIN_TYPES,
  type BuiltinType,
  builtinDetector,
  DEFAULT_TYPES,
} from "./builtin-detectors.js";
import { type Detector, type Finding, LANGUAGES, type Language } from "./detector.js";
import { normalizedView } from "./normalized-view.js";
import { DetectorError, RedactOptionsError } from "./redact-error.js";
import { createRedactionScope, type RedactionScope } from "./redaction-scope.js";

/**
 * How a redacted span is written: `"type"` gives `[EMAIL]`, `"indexed"` gives stable tokens
 * like `<EMAIL_1>` within a scope, and a function decides for itself.
 */
export type Placeholder = "type" | "indexed" | ((finding: Finding, value: string) => string);

/** Options shared by `redact`, `redactDeep`, the stream, the vault and the logger helpers. */
export interface RedactOptions {
  /** Built-in types to run. Defaults to every type but URL (`DEFAULT_TYPES`). */
  types?: readonly BuiltinType[];
  /** Your own detectors, run after the built-in ones. */
  detectors?: readonly Detector[];
  /** How a redacted span is written. Defaults to `"type"` (`[EMAIL]`). */
  placeholder?: Placeholder;
  /** Where indexed tokens come from, so they stay stable across calls. A `Vault` is a scope. */
  scope?: RedactionScope;
  /**
   * The lowest confidence (0 to 1) a finding needs to be redacted. Defaults to
   * `DEFAULT_THRESHOLD` (0.5). Lower it to redact more (names with no cue at all), raise it to
   * redact only what a cue, a key or a checksum vouches for.
   */
  threshold?: number;
  /**
   * The languages whose specific rules run (greetings, birth words, address orders, national
   * phone formats); rules that belong to no language always run. Defaults to every one of
   * `LANGUAGES`.
   */
  languages?: readonly Language[];
}

/** The confidence a finding needs when no `threshold` is given. */
export const DEFAULT_THRESHOLD = 0.5;

/** The outcome of redacting one text. */
export interface RedactResult {
  /** The text with every finding replaced by its placeholder. */
  text: string;
  /** What was found, in order, with spans in the original text. */
  findings: Finding[];
}

const TYPE_NAME = /^[A-Z][A-Z0-9_]*$/;
const OPTION_KEYS = new Set([
  "types",
  "detectors",
  "placeholder",
  "scope",
  "threshold",
  "languages",
]);

/** A compiled set of detectors with the options it was built from. @internal */
export interface RedactionEngine {
  readonly detectors: readonly Detector[];
  readonly placeholder: Placeholder;
  readonly scope: RedactionScope | undefined;
  readonly threshold: number;
  /** The longest span any detector may report. */
  readonly maxLength: number;
  find(text: string): Finding[];
  /** Replaces `findings` (sorted, non-overlapping) in `text`. */
  apply(text: string, findings: readonly Finding[], scope?: RedactionScope): string;
  redact(text: string, scope?: RedactionScope): RedactResult;
}

interface Candidate {
  start: number;
  end: number;
  type: string;
  priority: number;
  rule: string;
  score: number;
}

/** Checks the shared options and returns the ones given, so other option sets can extend them. */
export function validateRedactOptions(
  options: unknown,
  name: string,
  extraKeys: readonly string[] = [],
): RedactOptions {
  if (options === undefined) return {};
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new RedactOptionsError(
      `[redact] ${name} options must be an object; got ${describe(options)}.`,
    );
  }
  const record = options as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!OPTION_KEYS.has(key) && !extraKeys.includes(key)) {
      const known = [...OPTION_KEYS, ...extraKeys].join(", ");
      throw new RedactOptionsError(
        `[redact] ${name} got an unknown option "${key}"; known options are ${known}.`,
      );
    }
  }
  const { types, detectors, placeholder, scope, threshold, languages } = record;
  if (
    threshold !== undefined &&
    !(typeof threshold === "number" && threshold >= 0 && threshold <= 1)
  ) {
    throw new RedactOptionsError(
      `[redact] ${name}: threshold must be a number from 0 to 1 (a finding's confidence); got ${typeof threshold === "number" ? String(threshold) : describe(threshold)}. Use 0.5 (the default) for cues and checksums, lower to redact more, higher to redact less.`,
    );
  }
  if (languages !== undefined) {
    if (!Array.isArray(languages) || languages.length === 0) {
      throw new RedactOptionsError(
        `[redact] ${name}: languages must be a non-empty array of ${LANGUAGES.join(", ")}; leave it out for all of them.`,
      );
    }
    for (const language of languages) {
      if (!LANGUAGES.includes(language as Language)) {
        throw new RedactOptionsError(
          `[redact] ${name}: unknown language ${describe(language)} in languages; use one of ${LANGUAGES.join(", ")}.`,
        );
      }
    }
  }
  if (types !== undefined) {
    if (!Array.isArray(types)) {
      throw new RedactOptionsError(
        `[redact] ${name}: types must be an array of ${BUILTIN_TYPES.join(", ")}.`,
      );
    }
    for (const type of types) {
      if (!BUILTIN_TYPES.includes(type as BuiltinType)) {
        throw new RedactOptionsError(
          `[redact] ${name}: unknown type ${describe(type)} in types; use one of ${BUILTIN_TYPES.join(", ")}, or add a detector for it with the detectors option.`,
        );
      }
    }
  }
  if (detectors !== undefined) {
    if (!Array.isArray(detectors)) {
      throw new RedactOptionsError(
        `[redact] ${name}: detectors must be an array of Detector objects.`,
      );
    }
    for (const detector of detectors) validateDetector(detector, name);
  }
  if (
    placeholder !== undefined &&
    placeholder !== "type" &&
    placeholder !== "indexed" &&
    typeof placeholder !== "function"
  ) {
    throw new RedactOptionsError(
      `[redact] ${name}: placeholder must be "type", "indexed" or a function (finding, value) => string; got ${describe(placeholder)}.`,
    );
  }
  if (
    scope !== undefined &&
    (typeof scope !== "object" ||
      scope === null ||
      typeof (scope as RedactionScope).token !== "function")
  ) {
    throw new RedactOptionsError(
      `[redact] ${name}: scope must be a RedactionScope such as createVault().`,
    );
  }
  return record as RedactOptions;
}

function validateDetector(detector: unknown, name: string): void {
  const candidate = detector as Partial<Detector> | null;
  if (typeof candidate !== "object" || candidate === null || typeof candidate.find !== "function") {
    throw new RedactOptionsError(
      `[redact] ${name}: each detector needs a find(text) method; got ${describe(detector)}.`,
    );
  }
  if (typeof candidate.type !== "string" || !TYPE_NAME.test(candidate.type)) {
    throw new RedactOptionsError(
      `[redact] ${name}: detector type must be upper snake case like "EMPLOYEE_ID"; got ${describe(candidate.type)}.`,
    );
  }
  if (typeof candidate.name !== "string" || candidate.name.length === 0) {
    throw new RedactOptionsError(
      `[redact] ${name}: detector of type ${candidate.type} needs a non-empty name.`,
    );
  }
  if (
    candidate.maxLength !== undefined &&
    !(Number.isInteger(candidate.maxLength) && candidate.maxLength > 0)
  ) {
    throw new RedactOptionsError(
      `[redact] ${name}: detector ${candidate.name} maxLength must be a positive integer.`,
    );
  }
}

function describe(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value;
}

function placeholderFor(
  placeholder: Placeholder,
  finding: Finding,
  value: string,
  scope: RedactionScope,
): string {
  if (placeholder === "type") return `[${finding.type}]`;
  if (placeholder === "indexed") return scope.token(finding.type, value);
  const written = placeholder(finding, value);
  if (typeof written !== "string") {
    throw new RedactOptionsError("[redact] the placeholder function must return a string.");
  }
  return written;
}

/** Builds an engine from validated options. @internal */
export function compileEngine(options: RedactOptions): RedactionEngine {
  const types = options.types ?? DEFAULT_TYPES;
  const detectors: Detector[] = [...new Set(types)].map((type) => builtinDetector(type));
  if (options.detectors !== undefined) detectors.push(...options.detectors);
  const placeholder = options.placeholder ?? "type";
  const fixedScope = options.scope;
  const threshold = options.threshold ?? DEFAULT_THRESHOLD;
  const languages =
    options.languages === undefined || options.languages.length === LANGUAGES.length
      ? undefined
      : new Set(options.languages);
  const maxLength = Math.max(64, ...detectors.map((detector) => detector.maxLength ?? 256));

  const ruleNames = new Map<Detector, Map<string, string>>();
  function ruleName(detector: Detector, rule: string | undefined): string {
    if (rule === undefined) return detector.name;
    let names = ruleNames.get(detector);
    if (names === undefined) {
      names = new Map();
      ruleNames.set(detector, names);
    }
    let name = names.get(rule);
    if (name === undefined) {
      name = `${detector.name}/${rule}`;
      names.set(rule, name);
    }
    return name;
  }

  function find(original: string): Finding[] {
    if (original.length === 0) return [];
    // Detectors read the normalised view (NFKC, no zero-width characters, ASCII digits,
    // "(at)" as "@"); the findings are mapped back so the original span is redacted.
    const view = normalizedView(original);
    const text = view.text;
    const candidates: Candidate[] = [];
    for (const detector of detectors) {
      const priority = detector.priority ?? 50;
      for (const match of detector.find(text)) {
        const { start, end } = match;
        if (
          !(
            start >= 0 &&
            end <= text.length &&
            start < end &&
            Number.isInteger(start) &&
            Number.isInteger(end)
          )
        ) {
          throw new DetectorError(
            `[redact] detector ${detector.name} reported the span [${String(start)}, ${String(end)}) outside a text of ${text.length} characters; fix its find() method.`,
          );
        }
        const score = match.score ?? 1;
        if (score < threshold) continue;
        if (
          languages !== undefined &&
          match.language !== undefined &&
          !languages.has(match.language)
        )
          continue;
        candidates.push({
          start,
          end,
          type: detector.type,
          priority,
          rule: ruleName(detector, match.rule),
          score,
        });
      }
    }
    if (candidates.length === 0) return [];
    if (candidates.length > 1)
      candidates.sort((left, right) => left.start - right.start || right.end - left.end);
    // Overlapping spans merge into one finding (nothing partly redacted leaks), typed by the
    // detector with the highest priority.
    const findings: Finding[] = [];
    let merged = candidates[0]!;
    let { start, end, type, priority, rule, score } = merged;
    for (let index = 1; index < candidates.length; index++) {
      merged = candidates[index]!;
      if (merged.start < end) {
        if (merged.end > end) end = merged.end;
        if (merged.priority > priority) {
          priority = merged.priority;
          type = merged.type;
          rule = merged.rule;
          score = merged.score;
        } else if (merged.type === type && merged.score > score) score = merged.score;
      } else {
        findings.push({ type, start, end, rule, score });
        ({ start, end, type, priority, rule, score } = merged);
      }
    }
    findings.push({ type, start, end, rule, score });
    if (view.identity) return findings;
    const mapped: Finding[] = [];
    for (const finding of findings) {
      const [from, to] = view.originalSpan(finding.start, finding.end);
      const previous = mapped[mapped.length - 1];
      // Two view characters of one original character ("ﬁ") may end up in two findings.
      if (previous !== undefined && from < previous.end) {
        if (to > previous.end) previous.end = to;
      } else {
        mapped.push({
          type: finding.type,
          start: from,
          end: to,
          rule: finding.rule,
          score: finding.score,
        });
      }
    }
    return mapped;
  }

  function apply(text: string, findings: readonly Finding[], scope?: RedactionScope): string {
    if (findings.length === 0) return text;
    const activeScope = scope ?? fixedScope ?? createRedactionScope();
    let output = "";
    let last = 0;
    for (const finding of findings) {
      output += text.slice(last, finding.start);
      output += placeholderFor(
        placeholder,
        finding,
        text.slice(finding.start, finding.end),
        activeScope,
      );
      last = finding.end;
    }
    return output + text.slice(last);
  }

  return {
    detectors,
    placeholder,
    scope: fixedScope,
    threshold,
    maxLength,
    find,
    apply,
    redact(text, scope) {
      const findings = find(text);
      return { text: apply(text, findings, scope), findings };
    },
  };
}

let defaultEngine: RedactionEngine | undefined;

/** The engine for `options`, reusing one compiled default when no options are given. @internal */
export function engineFor(
  options: unknown,
  name: string,
  extraKeys: readonly string[] = [],
): RedactionEngine {
  const validated = validateRedactOptions(options, name, extraKeys);
  if (
    validated.types === undefined &&
    validated.detectors === undefined &&
    validated.placeholder === undefined &&
    validated.scope === undefined &&
    validated.threshold === undefined &&
    validated.languages === undefined
  ) {
    defaultEngine ??= compileEngine({});
    return defaultEngine;
  }
  return compileEngine(validated);
}
