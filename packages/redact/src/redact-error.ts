const brand = Symbol.for("loopguard.redact.error");

/**
 * The base class of every error `@loopguard/redact` throws.
 *
 * Check with `RedactError.isInstance(error)`, which works across two copies of the package.
 * Redaction itself never throws on odd input; errors are for broken contracts such as
 * invalid options or a custom detector that reports spans outside the text.
 */
export class RedactError extends Error {
  readonly [brand] = true;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "RedactError";
  }

  /** Whether `value` is a `RedactError` from any copy of this package. */
  static isInstance(value: unknown): value is RedactError {
    return (
      typeof value === "object" &&
      value !== null &&
      (value as Record<symbol, unknown>)[brand] === true
    );
  }
}

/** Thrown when options passed to a public function are invalid; the message says what to change. */
export class RedactOptionsError extends RedactError {
  constructor(message: string) {
    super(message);
    this.name = "RedactOptionsError";
  }
}

/** Thrown when a custom detector breaks its contract (for example a span outside the text). */
export class DetectorError extends RedactError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "DetectorError";
  }
}

/**
 * Thrown when a vault key is missing, unreadable or wrong: no `LOOPGUARD_VAULT_KEY`, a key id
 * the provider does not hold, a key that does not decrypt what was written under it.
 */
export class VaultKeyError extends RedactError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "VaultKeyError";
  }
}

/** Thrown when stored vault data is damaged: a line that is not a sealed entry, a failed tag check. */
export class VaultDataError extends RedactError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "VaultDataError";
  }
}

/** Thrown when a subject's data was forgotten (crypto-shredded) and a value of it is asked for. */
export class VaultForgottenError extends RedactError {
  constructor(message: string) {
    super(message);
    this.name = "VaultForgottenError";
  }
}
