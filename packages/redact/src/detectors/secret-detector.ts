import type { Detector, DetectorMatch } from "../detector.js";
import { isSensitiveKey } from "../sensitive-key.js";
import { SECRET_RULES, SECRET_RULES_MAX_LENGTH, type SecretRule } from "./secret-rules.js";

const STANDALONE_RULES = SECRET_RULES.filter((secretRule) => secretRule.triggers === undefined);
const RULES_BY_TRIGGER = new Map<string, SecretRule[]>();
for (const secretRule of SECRET_RULES) {
  for (const trigger of secretRule.triggers ?? []) {
    RULES_BY_TRIGGER.set(trigger, [...(RULES_BY_TRIGGER.get(trigger) ?? []), secretRule]);
  }
}
// Finding triggers fast. V8 scans an alternation of 60 literals at a few ns per character,
// so triggers are split three ways. Those that start with a capital letter go in one regex
// (capitals are rare in prose, so its first-character check skips most of the text). The
// others are found from their first punctuation ("ghp_" from its "_"), which is
// rarer still. The few with neither ("eyJ", "aws") are found with indexOf.
const escapeTrigger = (trigger: string) => trigger.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
const TRIGGERS = [...RULES_BY_TRIGGER.keys()].sort((left, right) => right.length - left.length);
const CAPITAL_TRIGGER = new RegExp(
  TRIGGERS.filter((trigger) => /^[A-Z]/.test(trigger))
    .map(escapeTrigger)
    .join("|"),
  "g",
);
// Triggers found from a punctuation character, bucketed by the character beside it (the one
// before for "ghp_", the one after for "-us"), so each "-" or "." of the text is checked only
// against triggers that fit there. Ranks keep the longest-first order ("sk-ant-" before "sk-").
interface SpecialTrigger {
  trigger: string;
  offset: number;
  rank: number;
}
const SPECIAL_CHARS: number[] = [];
/** By special character: triggers keyed by the code of the character before (offset > 0). */
const BEFORE = new Map<number, SpecialTrigger[][]>();
/** By special character: triggers keyed by the code of the character after (offset 0). */
const AFTER = new Map<number, SpecialTrigger[][]>();
const PLAIN_TRIGGERS: string[] = [];
for (const [rank, trigger] of TRIGGERS.entries()) {
  if (/^[A-Z]/.test(trigger)) continue;
  const offset = trigger.search(/[_\-:.]/);
  if (offset === -1) {
    PLAIN_TRIGGERS.push(trigger);
    continue;
  }
  const special = trigger.charCodeAt(offset);
  if (!SPECIAL_CHARS.includes(special)) {
    SPECIAL_CHARS.push(special);
    BEFORE.set(
      special,
      Array.from({ length: 128 }, () => []),
    );
    AFTER.set(
      special,
      Array.from({ length: 128 }, () => []),
    );
  }
  const [table, neighbour] =
    offset > 0
      ? [BEFORE.get(special)!, trigger.charCodeAt(offset - 1)]
      : [AFTER.get(special)!, trigger.charCodeAt(offset + 1)];
  table[neighbour]!.push({ trigger, offset, rank });
}

/** The first trigger of `candidates` (in rank order) that occurs with its special character at `index`. */
function firstAt(
  text: string,
  index: number,
  candidates: readonly SpecialTrigger[] | undefined,
): SpecialTrigger | undefined {
  if (candidates === undefined) return undefined;
  for (const candidate of candidates) {
    const start = index - candidate.offset;
    if (start >= 0 && text.startsWith(candidate.trigger, start)) return candidate;
  }
  return undefined;
}

/** Calls `visit(trigger, index)` for every trigger occurrence in `text`. */
function forEachTrigger(text: string, visit: (trigger: string, index: number) => void): void {
  CAPITAL_TRIGGER.lastIndex = 0;
  for (let hit = CAPITAL_TRIGGER.exec(text); hit !== null; hit = CAPITAL_TRIGGER.exec(text))
    visit(hit[0], hit.index);
  for (const special of SPECIAL_CHARS) {
    const before = BEFORE.get(special)!;
    const after = AFTER.get(special)!;
    const char = String.fromCharCode(special);
    for (let index = text.indexOf(char); index !== -1; index = text.indexOf(char, index + 1)) {
      const previous = index > 0 ? text.charCodeAt(index - 1) : 128;
      const next = text.charCodeAt(index + 1);
      const left = firstAt(text, index, previous < 128 ? before[previous] : undefined);
      const right = firstAt(text, index, next < 128 ? after[next] : undefined);
      const found =
        left === undefined ? right : right === undefined || left.rank < right.rank ? left : right;
      if (found !== undefined) visit(found.trigger, index - found.offset);
    }
  }
  for (const trigger of PLAIN_TRIGGERS) {
    for (let index = text.indexOf(trigger); index !== -1; index = text.indexOf(trigger, index + 1))
      visit(trigger, index);
  }
}

/**
 * Cheap necessary conditions of the rules scanned on their own: a Discord token has two dots
 * seven apart, a Telegram token a colon after a digit, a Twilio key "AC" or "SK".
 */
function mayMatch(rule: string, text: string): boolean {
  if (rule === "discord-bot-token") {
    for (let index = text.indexOf("."); index !== -1; index = text.indexOf(".", index + 1))
      if (text.charCodeAt(index + 7) === 46) return true;
    return false;
  }
  if (rule === "telegram-bot-token") {
    for (let index = text.indexOf(":"); index !== -1; index = text.indexOf(":", index + 1)) {
      const before = text.charCodeAt(index - 1);
      if (before >= 48 && before <= 57) return true;
    }
    return false;
  }
  if (rule === "twilio-key") return text.includes("AC") || text.includes("SK");
  return true;
}

function record(secretRule: SecretRule, match: RegExpExecArray, matches: DetectorMatch[]): void {
  const { group, validate } = secretRule;
  const value = group === undefined ? match[0] : (match[group] ?? "");
  if (value.length === 0) return;
  if (validate !== undefined && !validate(value)) return;
  const start = group === undefined ? match.index : match.index + match[0].lastIndexOf(value);
  matches.push({ start, end: start + value.length, rule: secretRule.rule });
}

const STEM = /pass|pwd|secret|token|key|auth|cookie|credential|jwt|bearer|session|contrase/gi;
const PEM_HEADER = /-----BEGIN ((?:[A-Z0-9]+ ){0,4})PRIVATE KEY(?: BLOCK)?-----/y;
const REVERSED_COMPARISON =
  /(["'`])([^"'`\n]{1,256})\1\s{0,3}[!=]==?\s{0,3}([A-Za-z_$][\w.$]{0,63})/g;
const PLACEHOLDER_VALUE =
  /^(?:\$\{[^}]*\}|\{\{[^}]*\}\}|\$[A-Za-z_][A-Za-z0-9_]*|%[sdj]|<[^>]*>|\[[A-Z_]+\]|\*+|x+|null|undefined|none|nil|true|false|process\.env\.[\w.]+)$/i;
const HAS_ALPHANUMERIC = /[\p{L}\p{N}]/u;
const MAX_KEY = 64;
const MAX_VALUE = 256;

function isIdentifierCode(code: number): boolean {
  return (
    (code >= 48 && code <= 57) ||
    (code >= 65 && code <= 90) ||
    (code >= 97 && code <= 122) ||
    code === 95 ||
    code === 45 ||
    code === 46 ||
    code === 241 // ñ, for contraseña
  );
}

function isQuote(char: string | undefined): boolean {
  return char === '"' || char === "'" || char === "`";
}

function isSpace(char: string | undefined): boolean {
  return char === " " || char === "\t";
}

const OPERATORS = ["===", "!==", "==", "!=", ":=", "=>", "=", ":"] as const;

function plausibleValue(value: string): boolean {
  return value.length > 0 && HAS_ALPHANUMERIC.test(value) && !PLACEHOLDER_VALUE.test(value);
}

/** The end of the line, or MAX_VALUE characters on: bounded so that scanning stays linear. */
function lineEnd(text: string, from: number): number {
  const limit = Math.min(text.length, from + MAX_VALUE);
  let index = from;
  while (index < limit && text.charCodeAt(index) !== 10 && text.charCodeAt(index) !== 13) index++;
  return index;
}

/**
 * Finds values assigned to sensitive names: `password=…`, `"apiKey": "…"`,
 * `Authorization: Bearer …`, `--token …`, `secret == "…"`. Only the value is reported.
 */
function findAssignments(text: string, matches: DetectorMatch[]): void {
  STEM.lastIndex = 0;
  for (let stem = STEM.exec(text); stem !== null; stem = STEM.exec(text)) {
    let keyStart = stem.index;
    const floor = Math.max(0, stem.index - MAX_KEY);
    while (keyStart > floor && isIdentifierCode(text.charCodeAt(keyStart - 1))) keyStart--;
    let keyEnd = stem.index + stem[0].length;
    const ceiling = Math.min(text.length, keyEnd + MAX_KEY);
    while (keyEnd < ceiling && isIdentifierCode(text.charCodeAt(keyEnd))) keyEnd++;
    STEM.lastIndex = keyEnd;
    const key = text.slice(keyStart, keyEnd);
    const flag = key.startsWith("-");
    if (!isSensitiveKey(key)) continue;

    let position = keyEnd;
    const opening = text[keyStart - 1];
    if (isQuote(opening) && text[position] === opening) position++;
    else if (text[position] === "]" || text[position] === ")") position++;
    let spacesBefore = 0;
    while (spacesBefore < 8 && isSpace(text[position])) {
      position++;
      spacesBefore++;
    }
    let operator = "";
    for (const candidate of OPERATORS) {
      if (text.startsWith(candidate, position)) {
        operator = candidate;
        break;
      }
    }
    position += operator.length;
    let spacesAfter = 0;
    while (spacesAfter < 8 && isSpace(text[position])) {
      position++;
      spacesAfter++;
    }
    const first = text[position];
    let valueStart = position;
    let valueEnd = position;
    if (isQuote(first)) {
      valueStart = position + 1;
      const limit = lineEnd(text, valueStart);
      let close = valueStart;
      while (close < limit && text[close] !== first) close += text[close] === "\\" ? 2 : 1;
      if (close < limit && text[close] === first) {
        valueEnd = close;
        // `secret "value";` has no operator: accept it only in that statement form.
        if (operator === "" && text[close + 1] !== ";") continue;
      } else {
        if (operator === "") continue;
        valueEnd = limit; // unterminated quote: fail closed to the end of the line
      }
    } else {
      if (operator === "" && !(flag && spacesBefore > 0)) continue;
      if (operator.length >= 2 && operator !== ":=" && operator !== "=>") continue; // `password == other`
      const spaced =
        (operator === ":" && spacesAfter > 0) ||
        (operator === "=" && spacesBefore > 0 && spacesAfter > 0);
      if (spaced) {
        valueEnd = lineEnd(text, valueStart);
        while (valueEnd > valueStart && /[\s,;'"`]/.test(text[valueEnd - 1]!)) valueEnd--;
      } else {
        const limit = lineEnd(text, valueStart);
        valueEnd = valueStart;
        while (valueEnd < limit && !/[\s,;&"'`<>)\]}]/.test(text[valueEnd]!)) valueEnd++;
      }
    }
    if (valueEnd <= valueStart) continue;
    if (!plausibleValue(text.slice(valueStart, valueEnd))) continue;
    matches.push({ start: valueStart, end: valueEnd, rule: "assignment" });
    STEM.lastIndex = Math.max(STEM.lastIndex, valueEnd);
  }

  if (text.includes("==") || text.includes("!=")) {
    REVERSED_COMPARISON.lastIndex = 0;
    for (
      let match = REVERSED_COMPARISON.exec(text);
      match !== null;
      match = REVERSED_COMPARISON.exec(text)
    ) {
      const value = match[2]!;
      if (isSensitiveKey(match[3]!) && plausibleValue(value)) {
        const start = match.index + 1;
        matches.push({ start, end: start + value.length, rule: "comparison" });
      }
    }
  }
}

/** Finds PEM and PGP private key blocks; a block with no END line runs to the end of the text. */
function findPrivateKeys(text: string, matches: DetectorMatch[]): void {
  let begin = text.indexOf("-----BEGIN ");
  while (begin !== -1) {
    PEM_HEADER.lastIndex = begin;
    const header = PEM_HEADER.exec(text);
    if (header === null) {
      begin = text.indexOf("-----BEGIN ", begin + 1);
      continue;
    }
    const endMarker = text.indexOf("-----END ", begin + header[0].length);
    let end = text.length;
    if (endMarker !== -1) {
      const close = text.indexOf("-----", endMarker + 9);
      end = close === -1 || close - endMarker > 80 ? text.length : close + 5;
    }
    matches.push({ start: begin, end, rule: "private-key" });
    begin = end >= text.length ? -1 : text.indexOf("-----BEGIN ", end);
  }
}

/**
 * Finds credentials: provider tokens (AWS, GitHub, GitLab, Slack, Stripe, Anthropic,
 * OpenAI, Google, npm, PyPI, SendGrid, Twilio, Mailchimp, Telegram, Discord, Shopify,
 * Hugging Face, …), JWTs whose header and payload decode to JSON, bearer tokens, PEM and PGP
 * private keys, passwords in URLs and connection strings, and values assigned to sensitive
 * names (`password=`, `"api_key": …`, `Authorization: …`).
 */
export function secretDetector(): Detector {
  return {
    type: "SECRET",
    name: "secret",
    priority: 60,
    maxLength: SECRET_RULES_MAX_LENGTH,
    find(text) {
      const matches: DetectorMatch[] = [];
      for (const secretRule of STANDALONE_RULES) {
        const { pattern } = secretRule;
        if (!mayMatch(secretRule.rule, text)) continue;
        pattern.lastIndex = 0;
        for (let match = pattern.exec(text); match !== null; match = pattern.exec(text))
          record(secretRule, match, matches);
      }
      forEachTrigger(text, (trigger, index) => {
        for (const secretRule of RULES_BY_TRIGGER.get(trigger) ?? []) {
          const at = index + (secretRule.offset ?? 0);
          if (at < 0) continue;
          secretRule.pattern.lastIndex = at;
          const match = secretRule.pattern.exec(text);
          if (match !== null) record(secretRule, match, matches);
        }
      });
      findPrivateKeys(text, matches);
      findAssignments(text, matches);
      return matches;
    },
  };
}
