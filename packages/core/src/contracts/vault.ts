/**
 * The Vault contract: reversible tokenisation of personal data (the vault of
 * `@loopguard/redact`). The model, the log and the traces see `<EMAIL_1>`; a tool gets the real
 * value back at execution time.
 *
 * Failure rule: a vault that throws fails the run (`failed`, with the vault's message): the loop
 * never sends or logs a value it could not tokenise. `tokenize` must give the same token for the
 * same value within a run, and `reveal` must leave text without tokens unchanged; a resumed run
 * needs the same vault to reveal the tokens its log holds.
 */
export interface Vault {
  /** Replaces personal data in `text` with stable tokens. */
  tokenize(text: string): string;
  /** Puts the real values back into every string of `value` (deeply). */
  reveal<T>(value: T): T;
}
