/**
 * One span a detector found: `[start, end)` in UTF-16 code units of the text it was given.
 */
export interface DetectorMatch {
  start: number;
  end: number;
  /** Which rule of the detector matched, for diagnostics (for example `github-token`). */
  rule?: string;
  /**
   * How sure the detector is, from 0 to 1 (defaults to 1). Checksummed values score near 1; a
   * capitalised pair with no cue scores lower. Findings below the redactor's `threshold` are
   * dropped.
   */
  score?: number;
  /**
   * The language or country whose rule matched (`de`, `fr`, `ja`…), when the rule is specific
   * to one; the `languages` option keeps only the rules of the languages it names.
   */
  language?: Language;
}

/**
 * The languages and countries whose cues, address orders and formats the built-in detectors
 * know. `en` covers US and UK English; `ja` covers Japanese script and romaji; `zh` and `ko`
 * their scripts and Latin spellings.
 */
export type Language = "en" | "de" | "fr" | "es" | "it" | "nl" | "sv" | "pl" | "ja" | "zh" | "ko";

/** Every language the built-in detectors know. */
export const LANGUAGES: readonly Language[] = [
  "en",
  "de",
  "fr",
  "es",
  "it",
  "nl",
  "sv",
  "pl",
  "ja",
  "zh",
  "ko",
];

/**
 * A source of findings of one type. Built-in detectors cover EMAIL, PHONE, CREDIT_CARD,
 * US_SSN, IBAN, IP_ADDRESS, MAC_ADDRESS and SECRET; add your own with `patternDetector` or
 * by implementing this interface.
 *
 * How it fails: a detector that throws makes `redact` throw (redaction fails closed: no
 * unredacted text is returned); a detector that returns a span outside the text is a
 * `DetectorError`.
 */
export interface Detector {
  /** The finding type, upper snake case (`EMAIL`, `EMPLOYEE_ID`); it names the placeholder. */
  readonly type: string;
  /** A name for diagnostics; unique among the detectors of one redactor. */
  readonly name: string;
  /** Which detector wins where spans overlap: higher wins. Built-ins use 10 to 60. */
  readonly priority?: number;
  /**
   * The longest span this detector can report, in characters. The streaming redactor holds
   * back this much text at the end of each chunk so that a value split across chunks is
   * still caught. Defaults to 256.
   */
  readonly maxLength?: number;
  /** Every match in `text`, in any order. */
  find(text: string): Iterable<DetectorMatch>;
}

/**
 * One redacted span: its type, its place in the original text and the rule that found it.
 */
export interface Finding {
  type: string;
  start: number;
  end: number;
  /** The detector (and rule) that found it, such as `secret/github-token`. */
  rule: string;
  /** The detector's confidence, 0 to 1 (see `DetectorMatch.score`). */
  score: number;
}
