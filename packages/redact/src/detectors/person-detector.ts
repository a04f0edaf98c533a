import type { Detector, DetectorMatch, Language } from "../detector.js";
import {
  CJK_SURNAMES,
  CLOSINGS,
  GREETINGS,
  HONORIFICS,
  NAME_KEYS,
  NAME_VERBS,
  NOT_NAME_WORDS,
  PEOPLE_HEADERS,
} from "../lexicon/name-cues.js";
import { GIVEN_NAMES, SURNAMES } from "../lexicon/name-lexicon.js";
import {
  BRAND_WORDS,
  BUSINESS_WORDS,
  FAMILY_NAME_ENDINGS,
  FAMILY_NAMES_I18N,
  FUNCTION_WORDS_I18N,
  GIVEN_NAMES_I18N,
  ORGANISATION_WORDS,
  PLACE_WORDS,
} from "../lexicon/names-by-language.js";

const MAX_NAME = 80;
/** Shape-scored runs below this are not reported at all (no threshold would keep them). */
const MIN_REPORTED = 0.2;

/** Scripts written without capitals: a name there is found by its cue alone. */
const HAN_HANGUL = /[\p{Script=Han}\p{Script=Hangul}\u3005]/u;
const KANA = /[\p{Script=Hiragana}\p{Script=Katakana}]/u;
const UNCASED_WORD =
  /^[\p{Script=Arabic}\p{Script=Hebrew}\p{Script=Devanagari}\p{Script=Thai}\p{M}]+/u;
const CASED_TOKEN =
  /^(?:\p{Lu}\.(?=[ _])|\p{Lu}[\p{Ll}\p{Lu}\p{M}]*(?:['’-]\p{L}[\p{Ll}\p{M}]*)*)/u;
const PARTICLES = new Set([
  "van",
  "von",
  "der",
  "den",
  "de",
  "del",
  "della",
  "da",
  "di",
  "du",
  "la",
  "le",
  "al",
  "el",
  "bin",
  "ibn",
  "ben",
  "ter",
  "zu",
  "y",
  "dos",
  "das",
]);
// A name after a Japanese, Chinese or Korean honorific suffix: 佐藤 花子 様, 김민준 님.
const CJK_SUFFIX = /^[ \t]?(?:様|さま|さん|氏|先生|殿|君|くん|ちゃん|님|씨|선생님|女士|小姐|先生)/u;

interface Name {
  start: number;
  end: number;
  tokens: string[];
  uncased: boolean;
}

/** The run of two to four capitalised words starting at `at` (no honorific), or undefined. */
function capitalisedRunAt(text: string, at: number): Name | undefined {
  CAPITALISED_RUN.lastIndex = at;
  if (!CAPITALISED_RUN.test(text)) return undefined;
  const end = CAPITALISED_RUN.lastIndex;
  // Particles ("de", "van den") are part of the span, not words of the name.
  const tokens = text
    .slice(at, end)
    .split(" ")
    .filter((token) => !PARTICLES.has(token));
  return { start: at, end, tokens, uncased: false };
}

/** Reads a name starting at `from` (after spaces and an honorific), or undefined. */
function nameAt(text: string, from: number): Name | undefined {
  let index = from;
  while (text[index] === " " || text[index] === "\t" || text[index] === '"' || text[index] === "'")
    index++;
  // An honorific is skipped, not redacted: "Ms Brandt" keeps "Ms".
  const honorific = /^([A-Za-z]{1,4})\.?[ ]+(?=\p{Lu})/u.exec(text.slice(index, index + 8));
  if (honorific !== null && HONORIFICS.has(honorific[1]!.toLowerCase()))
    index += honorific[0].length;
  const start = index;
  const head = text.slice(index, index + MAX_NAME);
  const first = head.codePointAt(0);
  if (first === undefined) return undefined;
  const firstChar = String.fromCodePoint(first);
  if (HAN_HANGUL.test(firstChar)) {
    // A run of Han or Hangul, with at most one space (family name, space, given name).
    const match =
      /^[\p{Script=Han}\p{Script=Hangul}\u3005]{1,4}(?:[ \u3000](?!님|씨|様|さん|先生|선생)[\p{Script=Han}\p{Script=Hangul}\u3005]{1,3})?/u.exec(
        head,
      );
    if (match === null) return undefined;
    let length = match[0].length;
    // Stop before an honorific suffix that got read as part of the run.
    const suffix = /(?:様|さま|さん|氏|先生|殿|님|씨|女士|小姐)$/u.exec(match[0]);
    if (suffix !== null && suffix.index > 0) length = suffix.index;
    const value = head.slice(0, length).trimEnd();
    // One character is a name only as a family name under a key (`"성": "이"`).
    if (value.replace(/\s/g, "").length < 2 && !CJK_SURNAMES.has(value)) return undefined;
    return { start, end: start + value.length, tokens: [value], uncased: true };
  }
  if (KANA.test(firstChar)) {
    // A given name in kana under a key or after a greeting: さくら, ハルカ.
    const match = /^[\p{Script=Hiragana}\p{Script=Katakana}ー]{2,8}/u.exec(head);
    if (match === null) return undefined;
    return { start, end: start + match[0].length, tokens: [match[0]], uncased: true };
  }
  if (UNCASED_WORD.test(head)) {
    const tokens: string[] = [];
    let at = 0;
    while (tokens.length < 3) {
      const word = UNCASED_WORD.exec(head.slice(at));
      if (word === null) break;
      tokens.push(word[0]);
      at += word[0].length;
      if (head[at] !== " " || !UNCASED_WORD.test(head.slice(at + 1))) break;
      at++;
    }
    const end = head.slice(0, at).trimEnd().length;
    return { start, end: start + end, tokens, uncased: true };
  }
  const tokens: string[] = [];
  let at = 0;
  let end = 0;
  while (tokens.length < 4 && at < head.length) {
    const token = CASED_TOKEN.exec(head.slice(at));
    if (token === null) {
      // A lower-case particle between capitalised words: "Ludwig van Beethoven".
      // A family name under a key may open with one: "de Groot", "van den Heuvel".
      const particle = /^([a-z]{1,4})[ ]/.exec(head.slice(at));
      if (
        particle !== null &&
        PARTICLES.has(particle[1]!) &&
        (CASED_TOKEN.test(head.slice(at + particle[0].length)) ||
          PARTICLES.has(
            /^([a-z]{1,4})[ ]\p{Lu}/u.exec(head.slice(at + particle[0].length))?.[1] ?? "",
          ))
      ) {
        at += particle[0].length;
        continue;
      }
      break;
    }
    tokens.push(token[0]);
    at += token[0].length;
    end = at;
    if (head[at] === " " || head[at] === "_" || head[at] === "\u00a0") {
      at++;
      continue;
    }
    break;
  }
  if (tokens.length === 0) return undefined;
  // A trailing initial ("Maya L.") keeps its dot; a lone initial is not a name.
  if (tokens.every((token) => token.endsWith("."))) return undefined;
  return { start, end: start + end, tokens, uncased: false };
}

/** A token lower-cased for the lexicon, without dots and apostrophes (the regex only when needed). */
function lower(token: string): string {
  const lowered = token.toLowerCase();
  return lowered.includes(".") || lowered.includes("'") || lowered.includes("’")
    ? lowered.replace(/[.’']/g, "")
    : lowered;
}

function isNotName(token: string): boolean {
  const word = lower(token);
  return NOT_NAME_WORDS.has(word) || FUNCTION_WORDS_I18N.has(word) || BUSINESS_WORDS.has(word);
}

function knownGiven(word: string): boolean {
  return GIVEN_NAMES.has(word) || GIVEN_NAMES_I18N.has(word);
}

function knownFamily(word: string): boolean {
  return SURNAMES.has(word) || FAMILY_NAMES_I18N.has(word);
}

function familyShaped(word: string): boolean {
  if (word.length < 4) return false;
  for (const ending of FAMILY_NAME_ENDINGS)
    if (word.length > ending.length + 1 && word.endsWith(ending)) return true;
  return false;
}

// Words after a run that say a person did something (English has few capitalised verbs, so a
// lower-case word after a run is weaker evidence there than in German, where nouns are
// capitalised and a lower-case word after a run is a verb or a particle).
const PERSON_VERBS = new Set(
  `approved confirmed said says wrote writes called calls asked asks signed sent replied
  reported requested opened closed reviewed agreed declined cancelled canceled refunded
  paid ordered returned accepted rejected escalated joined left signed-off emailed phoned
  zatwierdził zatwierdziła potwierdził potwierdziła napisał napisała
  aprobó confirmó escribió validé approuvé confirmé écrit approvato confermato scritto
  godkänt godkände skrev goedgekeurd bevestigd schreef freigegeben bestätigt schrieb
  genehmigt`.split(/\s+/),
);
// Auxiliaries say less (any subject has them): they count fully only before one of the verbs
// above ("has signed", "hat freigegeben" at the clause end is not read).
const AUXILIARIES = new Set(
  `has had have is was will would can could should hat ist war wird a est sera ha es fue está
  har är blev heeft zal ma jest był była został`.split(/\s+/),
);

/** A capitalised word of letters only, with a vowel, 3 to 14 letters: what most names look like. */
const NAME_SHAPED = /^\p{Lu}(?=\p{L}*[aeiouyäöüåéèêëáíóúàìòùâîôûæøœąęó])\p{Ll}{2,13}$/u;

const PARTICLES_BEFORE =
  /(?:^|[\s"':=])((?:(?:van|von|der|den|de|del|da|di|du|la|le|ter|zu)[ ]){1,2})$/;

const CAPITAL_ARTICLE = /^(?:The|Le|La|Les|El|Los|Las|Il|Lo|Gli|Het|Der|Die|Das)[ ]/;

const ARTICLES = new Set(
  "the der die das dem den le la les el los las il lo gli het de een ein eine un une una".split(
    " ",
  ),
);

/** Whether an article stands right before `at` ("the Albert Heijn", "die Deutsche Bank"): a firm or a place, rarely a person. */
function articleBefore(text: string, at: number): boolean {
  const before = /([A-Za-z]+)[ ]$/.exec(text.slice(Math.max(0, at - 8), at));
  return before !== null && ARTICLES.has(before[1]!.toLowerCase());
}

/**
 * How likely a capitalised run with no strong cue is a person's name, from 0 to 1: what its
 * words are (known given and family names of every language the detector reads, family-name
 * endings), what stands after it (a verb; an organisation or street word rules it out) and
 * before it (a word like `with`, `an`, `à`, `till`). Places, organisations and words of
 * ordinary language rule a run out.
 */
function shapeScore(text: string, name: Name, cue: Cue): number {
  const words = name.tokens.filter((token) => !token.endsWith("."));
  if (words.length < 2 || words.length > 4) return 0;
  let evidence = -1.85;
  let place = 0;
  for (const [index, token] of words.entries()) {
    const word = lower(token);
    if (
      NOT_NAME_WORDS.has(word) ||
      FUNCTION_WORDS_I18N.has(word) ||
      BRAND_WORDS.has(word) ||
      BUSINESS_WORDS.has(word) ||
      CUE_LAST_WORDS.has(word)
    )
      return 0;
    if (PLACE_WORDS.has(word)) place++;
    if (token.length > 1 && token === token.toUpperCase()) return 0; // an acronym: "IBM", "NASA"
    if (index === 0) {
      if (knownGiven(word)) evidence += 1.6;
      // Family name first: Chinese, Korean and Japanese order, and lists ("Kim Min-jun").
      else if (knownFamily(word)) evidence += 1.0;
      else if (NAME_SHAPED.test(token)) evidence += 0.35;
    } else if (knownFamily(word)) evidence += 1.2;
    else if (familyShaped(word)) evidence += 0.9;
    else if (knownGiven(word)) evidence += 0.6;
    else if (/^\p{Lu}\p{Ll}+-\p{Ll}+$/u.test(token))
      evidence += 0.6; // Ji-hoon, Seo-yeon
    else if (NAME_SHAPED.test(token)) evidence += 0.35;
  }
  if (place === words.length || place >= 2) return 0;
  // What follows: an organisation or street word rules the run out; a verb supports it.
  const after = /^[ \t]*([\p{L}.]+)/u.exec(text.slice(name.end, name.end + 24));
  if (after !== null) {
    const next = after[1]!;
    const nextLower = next.toLowerCase();
    if (ORGANISATION_WORDS.has(nextLower)) return 0;
    if (PERSON_VERBS.has(nextLower)) evidence += 1.2;
    else if (AUXILIARIES.has(nextLower)) {
      const then = /^[ \t]*[\p{L}.]+[ \t]+([\p{L}-]+)/u.exec(text.slice(name.end, name.end + 40));
      evidence += then !== null && PERSON_VERBS.has(then[1]!.toLowerCase()) ? 1.2 : 0.5;
    } else if (/^\p{Ll}/u.test(next)) evidence += 0.3;
  }
  if (text[name.end] === "'" || text[name.end] === "’") evidence += 0.5; // possessive
  if (cue === "verb" || cue === "action") evidence += 1.3;
  return 1 / (1 + Math.exp(-evidence));
}

/** Whether a cased candidate found after a strong cue is a name. */
function strongName(name: Name): boolean {
  if (name.uncased) return true;
  const words = name.tokens.filter((token) => !token.endsWith("."));
  if (words.length === 0) return false;
  // A firm, a place of business or a title, even under a name key: "Luxury Palace".
  if (words.some((token) => BUSINESS_WORDS.has(lower(token)))) return false;
  const known = words.some((token) => knownGiven(lower(token)) || knownFamily(lower(token)));
  const stop = words.filter(isNotName).length;
  if (stop === 0) return true;
  // "Jack Black": a common word passes when a known name stands beside it.
  return known && stop < words.length;
}

/** Whether a cased candidate with only a weak cue, or none, is a name. */
function lexiconName(name: Name, weakCue: boolean): boolean {
  if (name.uncased) return false;
  const words = name.tokens.filter((token) => !token.endsWith("."));
  if (words.length < 2) return false;
  if (words.some(isNotName)) return false;
  const given = knownGiven(lower(words[0]!));
  const surname = knownFamily(lower(words[words.length - 1]!));
  if (given && surname) return true;
  // A known given name and a capitalised word that is no common word: "Maya Lindqvist".
  if (given && words[words.length - 1]!.length >= 3) return true;
  // With a cue ("spoke with", "escalated by"), one known part is enough.
  return weakCue && (given || surname);
}

// The scan looks for what every name in a cased script starts with, a capital followed by a
// small letter, which ordinary prose has once a sentence; the cue is then read backwards from
// there. Capitals are listed by range (Latin, Greek, Cyrillic) so no pattern needs the
// Unicode flag, and none opens with a look-behind (V8 would run it at every position).
const UPPER = "A-Z\\u00c0-\\u00d6\\u00d8-\\u00de\\u0100-\\u017f\\u0391-\\u03a9\\u0400-\\u042f";
const LOWER =
  "a-z\\u00df-\\u00f6\\u00f8-\\u00ff\\u0100-\\u024f\\u0300-\\u036f\\u03ac-\\u03ce\\u0430-\\u045f";
const CAPITAL_START = new RegExp(`[${UPPER}][${LOWER}]`, "g");
const WORD = `[${UPPER}][${LOWER}]+(?:['’-][${UPPER}${LOWER}][${LOWER}]*)*`;
const CAPITALISED_RUN = new RegExp(
  `${WORD}(?:[ ](?:(?:van|von|der|den|de|del|da|di|du|la|le|al|bin|ibn|ter|zu)[ ]){0,2}(?:[${UPPER}]\\.|${WORD})){1,3}`,
  "y",
);
// Scripts without capitals where names are common in support text: Han, Hangul, Arabic,
// Hebrew, Devanagari, Thai. Found only when the text has them.
const UNCASED_SCRIPT =
  /[\u0590-\u06ff\u0900-\u097f\u0e00-\u0e7f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]/;
const UNCASED_RUN =
  /[\p{Script=Han}\p{Script=Hangul}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Arabic}\p{Script=Hebrew}\p{Script=Devanagari}\p{Script=Thai}]+/gu;

// Chinese and Japanese names with no space inside running text: a family name (one or two
// characters from the list), one or two given-name characters, read only where a name
// stands (at a line start or after 给/和/与/、/致/：) and only when what follows closes a name
// (您好, 先生, 已, 说, 和, が, さん, 様, punctuation, the line end).
const HAN_NAME_BEFORE = /(?:^|[\n给和与及、同跟向由请致：:，,]|转给|交给)$/u;
const HAN_NAME_AFTER =
  /^(?:您好|你好|先生|女士|小姐|老师|经理|同学|已|说|和|与|、|，|,|。|：|が|は|さん|様|さま|氏|君|と|に|から|[ \u3000]*(?:\n|$))/u;
function hanNameAt(text: string, at: number): Name | undefined {
  if (!HAN_NAME_BEFORE.test(text.slice(Math.max(0, at - 2), at))) return undefined;
  for (const familyLength of [2, 1]) {
    const family = text.slice(at, at + familyLength);
    if (!CJK_SURNAMES.has(family)) continue;
    let index = at + familyLength;
    if (text[index] === " " || text[index] === "\u3000") index++;
    // A Japanese given name may be written in kana after the family name: 山本 さくら.
    const kana = /^[\p{Script=Hiragana}\p{Script=Katakana}ー]{2,4}/u.exec(
      text.slice(index, index + 4),
    );
    const lengths =
      kana !== null && index > at + familyLength
        ? Array.from({ length: kana[0].length - 1 }, (_, offset) => kana[0].length - offset)
        : [2, 1];
    for (const givenLength of lengths) {
      const given = text.slice(index, index + givenLength);
      if (
        given.length !== givenLength ||
        (kana === null && !/^[\p{Script=Han}\u3005]+$/u.test(given))
      )
        continue;
      const end = index + givenLength;
      if (HAN_NAME_AFTER.test(text.slice(end, end + 4)))
        return { start: at, end, tokens: [text.slice(at, end)], uncased: true };
    }
  }
  return undefined;
}

const GREETING_PHRASES = new Set([
  ...GREETINGS,
  "thank you",
  "good morning",
  "good afternoon",
  "good evening",
]);
const SELF_PHRASES = new Set([
  "my name is",
  "my name's",
  "name's",
  "je m'appelle",
  "ich heiße",
  "mein name ist",
  "me llamo",
  "mi nombre es",
  "jag heter",
  "mitt namn är",
  "mi chiamo",
  "меня зовут",
]);
const WEAK_SELF_PHRASES = new Set(["i am", "i'm", "this is"]);
// Verbs that are followed by a person far more often than by anything else.
const ACTION_WORDS = new Set(
  `spoke speak talked talk chatted met meeting call called calling emailed messaged escalated
  assigned forwarded transferred handed reassigned signed approved reported requested submitted
  raised opened closed reviewed written sent cc cc'd ask asked tell told thank thanked contact
  contacted ping pinged introduced according`.split(/\s+/),
);
const ACTION_PARTICLES = new Set(["with", "by", "to", "for", "from", "over"]);
const AFTER_NAME = new Set([",", "and", "or", "to", "&", "und", "et", "och", "y"]);
const BULLET = /^[ \t]*(?:[-*•·]|\d{1,2}[.)])[ \t]+$/;
const BULLET_LINE = /^[ \t]*(?:[-*•·]|\d{1,2}[.)])[ \t]+/;
const LETTER_BEFORE = /[\p{L}\p{M}\p{N}.'’_-]/u;
const KEY_WORD_UNIT = /[\p{L}\p{M}\p{N}_ -]/u;

type Cue = "strong" | "weak-self" | "action" | "verb" | "none";

function isWordUnit(code: number, char: string): boolean {
  if (code < 128) return (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 39;
  return LETTER_BEFORE.test(char) && char !== "." && char !== "_" && char !== "-";
}

/**
 * The words before `at` on its line, last first, lower case (at most three), and whether a
 * key separator (`:`, `=`, `：`) ends the prefix. One backward scan of at most 48 characters.
 */
function wordsBefore(
  text: string,
  at: number,
  floor: number,
): { words: string[]; separator: number } {
  const words: string[] = [];
  let index = at - 1;
  let separator = -1;
  // Spaces, a comma, an opening quote.
  while (index >= floor) {
    const code = text.charCodeAt(index);
    if (code === 32 || code === 9 || code === 44 || code === 34 || code === 39 || code === 0xa0)
      index--;
    else break;
  }
  const code = text.charCodeAt(index);
  if (index >= floor && (code === 58 || code === 61 || code === 0xff1a)) separator = index;
  if (text.charCodeAt(index) === 46) index--; // "Mr." keeps its word
  while (index >= floor && words.length < 3) {
    const end = index + 1;
    while (index >= floor && isWordUnit(text.charCodeAt(index), text[index]!)) index--;
    if (end - index - 1 <= 0) break;
    words.push(text.slice(index + 1, end).toLowerCase());
    if (index < floor || text.charCodeAt(index) !== 32) break;
    index--;
  }
  return { words, separator };
}

/** Every word that can end a cue: greetings, honorifics, verbs, the last word of a phrase. */
const CUE_LAST_WORDS = new Set<string>([
  ...[...GREETING_PHRASES, ...SELF_PHRASES, ...WEAK_SELF_PHRASES].map(
    (phrase) => phrase.split(" ").pop()!,
  ),
  ...HONORIFICS,
  ...ACTION_WORDS,
  ...ACTION_PARTICLES,
  ...AFTER_NAME,
  ...NAME_VERBS,
]);

/**
 * A cheap first look before `cueBefore`: most capitals in running text follow an ordinary
 * word ("the European Union"), and that word alone rules every cue out. Whether the full
 * look is needed: a line start, a separator or quote, a bullet, or a word some cue ends with.
 */
function mayHaveCue(text: string, at: number): boolean {
  let index = at - 1;
  while (index >= 0) {
    const code = text.charCodeAt(index);
    if (code === 32 || code === 9 || code === 44 || code === 0xa0) index--;
    else break;
  }
  if (index < 0) return true;
  const code = text.charCodeAt(index);
  const letter = (code >= 97 && code <= 122) || (code >= 65 && code <= 90) || code === 39;
  // A separator, quote, line break, bullet or a letter of another script: look fully.
  if (!letter) return true;
  const end = index + 1;
  while (index >= 0 && end - index <= 16) {
    const unit = text.charCodeAt(index);
    if ((unit >= 97 && unit <= 122) || (unit >= 65 && unit <= 90) || unit === 39) index--;
    else break;
  }
  // A non-ASCII letter before the word ("heiße", "Привет"): let the full look decide.
  if (index >= 0 && text.charCodeAt(index) >= 128) return true;
  return CUE_LAST_WORDS.has(text.slice(index + 1, end).toLowerCase());
}

/** What stands before a candidate at `at` on its line: the reason to read it as a name. */
/** Whether the word ending at the dot at `dot` is an honorific (`Dr.`, `Ms.`, `M.`), not a sentence end. */
function shortWordBefore(text: string, dot: number): boolean {
  let index = dot - 1;
  while (index >= 0 && dot - index <= 5) {
    const code = text.charCodeAt(index);
    if (!((code >= 65 && code <= 90) || (code >= 97 && code <= 122))) break;
    index--;
  }
  const word = text.slice(index + 1, dot);
  return word.length > 0 && word.length <= 4 && HONORIFICS.has(word.toLowerCase());
}

/** The start of the line holding `at`, looking back at most `limit` characters; -1 past that. */
function lineStartOf(text: string, at: number, limit: number): number {
  const floor = Math.max(0, at - limit);
  for (let index = at - 1; index >= floor; index--)
    if (text.charCodeAt(index) === 10) return index + 1;
  return floor === 0 ? 0 : -1;
}

function cueBefore(text: string, at: number, previousEnd: number): Cue {
  // Bounded: a text without line breaks must not cost a scan back to its start per capital.
  const found = lineStartOf(text, at, 48);
  const lineStart = found === -1 ? at - 48 : found;
  const floor = Math.max(lineStart, at - 48);
  const { words, separator } = wordsBefore(text, at, floor);
  if (separator !== -1) {
    // A key: Name:, "full_name": ", customer_name=, 氏名：
    let index = separator - 1;
    if (text[index] === '"' || text[index] === "'") index--;
    const end = index + 1;
    while (index >= Math.max(lineStart, separator - 32) && KEY_WORD_UNIT.test(text[index]!))
      index--;
    const key = text
      .slice(index + 1, end)
      .trim()
      .replace(/\s+/g, " ");
    if (key !== "" && NAME_KEYS.test(key)) return "strong";
  } else if (words.length > 0) {
    const [last, second, third] = words as [string, string | undefined, string | undefined];
    const two = second === undefined ? "" : `${second} ${last}`;
    const three = third === undefined ? "" : `${third} ${two}`;
    if (GREETING_PHRASES.has(last) || GREETING_PHRASES.has(two) || HONORIFICS.has(last))
      return "strong";
    if (SELF_PHRASES.has(last) || SELF_PHRASES.has(two) || SELF_PHRASES.has(three)) return "strong";
    if (WEAK_SELF_PHRASES.has(two)) return "weak-self";
  }
  const prefix = found === -1 ? "" : text.slice(floor, at);
  if (found !== -1 && (prefix.trim() === "" || BULLET.test(prefix))) {
    // A signature under a closing line, or an item of a list of people.
    if (lineStart > 0) {
      const previousLineStart = text.lastIndexOf("\n", lineStart - 2) + 1;
      const previousLine = text.slice(previousLineStart, lineStart);
      if (
        prefix.trim() === "" &&
        previousLine.length < 40 &&
        CLOSINGS.has(
          previousLine
            .trim()
            .replace(/[ \t]*[,.!]$/, "")
            .toLowerCase(),
        )
      )
        return "strong";
      if (BULLET.test(prefix)) {
        let line = previousLineStart;
        let content = previousLine;
        for (let hops = 0; hops < 50 && BULLET_LINE.test(content) && line > 0; hops++) {
          const start = text.lastIndexOf("\n", line - 2) + 1;
          content = text.slice(start, line);
          line = start;
        }
        if (PEOPLE_HEADERS.test(content.replace(/\s+$/, ""))) return "strong";
      }
    }
  }
  if (words.length > 0) {
    const [last, second] = words as [string, string | undefined];
    if (
      ACTION_WORDS.has(last) ||
      (ACTION_PARTICLES.has(last) && second !== undefined && ACTION_WORDS.has(second))
    )
      return "action";
  }
  // "X and Y", "X to Y" right after a name.
  if (previousEnd > 0 && at - previousEnd < 8) {
    const between = text.slice(previousEnd, at).trim().toLowerCase();
    if (AFTER_NAME.has(between)) return "action";
  }
  if (words.length > 0 && NAME_VERBS.has(words[0]!)) return "verb";
  return "none";
}

/** Whether the match at `index` starts a word (no letter, digit or joiner right before). */
function startsWord(text: string, index: number): boolean {
  if (index === 0) return true;
  const code = text.charCodeAt(index - 1);
  if (code < 128)
    return !(
      (code >= 48 && code <= 57) ||
      (code >= 65 && code <= 90) ||
      (code >= 97 && code <= 122) ||
      code === 95 ||
      code === 46 ||
      code === 39 ||
      code === 45
    );
  return !LETTER_BEFORE.test(text[index - 1]!);
}

/**
 * Finds person names, using what surrounds them the way a reader does: a greeting (`Hi Maya`,
 * `Dear Mr Okafor`), a label or key (`Name:`, `"full_name": "…"`, `customer_name=…`,
 * `氏名：`), an email header's display name (`From: "Maya Lindqvist" <…>`), a signature under
 * a closing line (`Kind regards,\nMaya`), a list under a header of people (`Attendees:`), a
 * self-introduction (`my name is …`), and an honorific suffix (`佐藤 花子 様`). In running
 * text, a capitalised pair is a name when the given-name and surname lexicon (public-domain
 * SSA and Census tables) knows both parts, or one part right after a word like `with` or
 * `by`. Capitalised common words (`Order Status`, `New York`) are not names.
 */
export function personDetector(): Detector {
  return {
    type: "PERSON",
    name: "person",
    priority: 15,
    maxLength: MAX_NAME,
    find(text) {
      const matches: DetectorMatch[] = [];
      let lastEnd = 0;
      const accept = (name: Name, score: number, rule: string, language?: Language) => {
        matches.push(
          language === undefined
            ? { start: name.start, end: name.end, score, rule }
            : { start: name.start, end: name.end, score, rule, language },
        );
        // A weak reading does not hide a strong one inside it ("Hallo Svenja" read as a pair
        // scores low; "Svenja" after the greeting must still be read).
        if (score >= 0.5) lastEnd = name.end;
      };
      CAPITAL_START.lastIndex = 0;
      // test() rather than exec(): no match array per capital; the match is two characters.
      while (CAPITAL_START.test(text)) {
        const at = CAPITAL_START.lastIndex - 2;
        if (at < lastEnd || !startsWord(text, at)) continue;
        // A capitalised common word ("The", "Customers", "Order") starts no name: skip it
        // before reading any context. One lower-cased slice and a set lookup.
        let wordEnd = at + 1;
        while (wordEnd < text.length && wordEnd - at < 16) {
          const code = text.charCodeAt(wordEnd);
          if (!((code >= 97 && code <= 122) || (code >= 65 && code <= 90))) break;
          wordEnd++;
        }
        if (NOT_NAME_WORDS.has(text.slice(at, wordEnd).toLowerCase())) continue;
        // Fast path: a capital after the end of a sentence ("... Union. Customers may") has no
        // cue; unless the lexicon knows a capitalised run there, it is not a name.
        let before = at - 1;
        while (before >= 0 && text.charCodeAt(before) === 32) before--;
        const mark = text.charCodeAt(before);
        if (
          (mark === 46 || mark === 33 || mark === 63) &&
          before > 4 &&
          !shortWordBefore(text, before)
        ) {
          const runName = capitalisedRunAt(text, at);
          if (runName === undefined) continue;
          if (lexiconName(runName, false)) accept(runName, 0.8, "lexicon");
          else if (articleBefore(text, at)) continue;
          else {
            const score = shapeScore(text, runName, "none");
            if (score >= MIN_REPORTED) accept(runName, score, "shape");
          }
          continue;
        }
        // A family name that opens with particles ("achternaam": "de Groot"): the cue stands
        // before the particles, and so does the name.
        const particles = PARTICLES_BEFORE.exec(text.slice(Math.max(0, at - 16), at));
        const from = particles === null ? at : at - particles[1]!.length;
        const cue = mayHaveCue(text, from) ? cueBefore(text, from, lastEnd) : "none";
        if (cue === "strong" || cue === "weak-self") {
          // "name: Le Baratin", "Hotel: The Grand": a capitalised article opens a firm's or a
          // place's name, not a person's.
          if (CAPITAL_ARTICLE.test(text.slice(from, from + 5))) continue;
          const name = nameAt(text, from);
          if (name === undefined || name.end <= name.start) continue;
          const words = name.tokens.filter((token) => !token.endsWith("."));
          let isName = false;
          if (cue === "strong") {
            isName = strongName(name);
            // A signature line holds the name alone, or the name and a role after a comma.
            if (
              isName &&
              lineStartOf(text, at, 48) !== -1 &&
              /^[ \t]*$/.test(text.slice(lineStartOf(text, at, 48), at))
            ) {
              const lineEnd = text.indexOf("\n", name.end);
              const rest = text.slice(name.end, lineEnd === -1 ? text.length : lineEnd);
              if (!/^[ \t]*(?:,.*)?$/.test(rest)) isName = false;
            }
          } else if (cue === "weak-self") {
            isName =
              strongName(name) &&
              !name.tokens.some(isNotName) &&
              name.tokens.some((token) => knownGiven(lower(token)) || knownFamily(lower(token)));
          }
          if (isName && words.length > 0) accept(name, cue === "strong" ? 0.95 : 0.75, "cue");
        } else {
          // Running text: the lexicon must know the name, or a strong verb must precede it.
          const runName = capitalisedRunAt(text, at);
          if (runName) {
            const runWords = runName.tokens.filter((token) => !token.endsWith("."));
            if (articleBefore(text, at)) {
              if (lexiconName(runName, false)) accept(runName, 0.4, "lexicon-after-article");
            } else if (lexiconName(runName, cue === "verb" || cue === "action")) {
              accept(runName, 0.8, "lexicon");
            } else if (
              cue === "action" &&
              runWords.length >= 2 &&
              strongName(runName) &&
              !runWords.some(isNotName)
            ) {
              accept(runName, 0.7, "action");
            } else {
              const score = shapeScore(text, runName, cue);
              if (score >= MIN_REPORTED) accept(runName, score, "shape");
            }
          }
        }
      }
      if (UNCASED_SCRIPT.test(text)) {
        UNCASED_RUN.lastIndex = 0;
        for (let match = UNCASED_RUN.exec(text); match !== null; match = UNCASED_RUN.exec(text)) {
          const at = match.index;
          if (at < lastEnd) continue;
          const name = nameAt(text, at);
          if (name === undefined || name.end <= name.start) continue;
          const strong = cueBefore(text, at, lastEnd) === "strong";
          if (!strong && /[\p{Script=Han}]/u.test(text[at]!)) {
            // Inside a run of Han: each place a name may start (the run start, after 给, 和…).
            const runEnd = at + match[0].length;
            let found = false;
            for (let index = at; index < runEnd - 1; index++) {
              if (index !== at && !HAN_NAME_BEFORE.test(text.slice(Math.max(0, index - 2), index)))
                continue;
              const hanName = hanNameAt(text, index);
              if (hanName !== undefined) {
                accept(
                  hanName,
                  0.75,
                  "han-position",
                  /[ぁ-ヿ]/u.test(text.slice(hanName.end, hanName.end + 3)) ? "ja" : "zh",
                );
                index = hanName.end - 1;
                found = true;
              }
            }
            if (found) {
              UNCASED_RUN.lastIndex = Math.max(UNCASED_RUN.lastIndex, lastEnd);
              continue;
            }
          }
          // Han and Hangul before an honorific suffix: 佐藤 花子 様, 김민준 님.
          let suffixed = false;
          if (!strong && HAN_HANGUL.test(text[at]!)) {
            const value = text.slice(name.start, name.end);
            suffixed =
              CJK_SUFFIX.test(text.slice(name.end, name.end + 5)) &&
              (CJK_SURNAMES.has(value.slice(0, 1)) ||
                CJK_SURNAMES.has(value.slice(0, 2)) ||
                /[ \u3000]/.test(value));
          }
          if (strong || suffixed) {
            accept(name, strong ? 0.95 : 0.85, strong ? "cue" : "suffix");
            UNCASED_RUN.lastIndex = Math.max(UNCASED_RUN.lastIndex, name.end);
          }
        }
      }
      return matches;
    },
  };
}
