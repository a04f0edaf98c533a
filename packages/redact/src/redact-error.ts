/**
 * Errors of `@loopguard/redact`, under the same scheme as `@loopguard/core`'s (redact imports no
 * other loopguard package, so it carries its own small base).
 *
 * Every error carries the brand `Symbol.for("loopguard.error")` and a stable `code`, and every
 * class declares a fixed `marker` (`loopguard.error.<ClassName>`, a string literal) stamped as
 * `Symbol.for(marker)` on its instances and those of its subclasses. `isInstance` reads these
 * symbols, so it works across two copies of the package and after minification; core's
 * `LoopguardError.isInstance` also recognises these errors.
 */
const brand = Symbol.for("loopguard.error");
const markerPrefix = "loopguard.error.";

/**
 * The base class of every error `@loopguard/redact` throws; each code has its own subclass.
 *
 * Check with `RedactError.isInstance(error)` or `VaultKeyError.isInstance(error)`, which work
 * across two copies of the package. Redaction itself never throws on odd input; errors are for
 * broken contracts such as invalid options or a custom detector that reports spans outside the
 * text.
 */
export abstract class RedactError extends Error {
  /** The fixed marker string of this class (`Symbol.for(marker)` brands its instances). */
  static readonly marker: string = "loopguard.error.RedactError";
  readonly [brand] = true;
  /** A stable snake_case code, one per class. */
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    let name: string | undefined;
    const self = this as unknown as Record<symbol, boolean>;
    for (
      let type: unknown = new.target;
      typeof type === "function" && type !== Error;
      type = Object.getPrototypeOf(type)
    ) {
      if (!Object.hasOwn(type, "marker")) continue;
      const marker = (type as unknown as { marker: string }).marker;
      self[Symbol.for(marker)] = true;
      name ??= marker.slice(markerPrefix.length);
    }
    this.name = (Object.hasOwn(new.target, "marker") ? name : undefined) ?? new.target.name;
  }

  /** Whether `value` is an error of this class (or a subclass), from any copy of this package. */
  static isInstance<T extends abstract new (...args: never[]) => RedactError>(
    this: T,
    value: unknown,
  ): value is InstanceType<T> {
    if (typeof value !== "object" || value === null) return false;
    const record = value as Record<symbol, unknown>;
    if (record[brand] !== true) return false;
    // biome-ignore lint/complexity/noThisInStatic: isInstance answers for the class it is called on
    const type = typeof this === "function" ? (this as unknown as { marker?: string }) : undefined;
    // Called unbound (e.g. passed as a callback), it checks for RedactError.
    const marker = type && Object.hasOwn(type, "marker") ? type.marker! : RedactError.marker;
    return record[Symbol.for(marker)] === true;
  }
}

/** Options passed to a public function are invalid; the message says what to change. Code `redact_options`. */
export class RedactOptionsError extends RedactError {
  static override readonly marker: string = "loopguard.error.RedactOptionsError";
  constructor(message: string) {
    super("redact_options", message);
  }
}

/** A custom detector broke its contract (for example a span outside the text). Code `detector_contract`. */
export class DetectorError extends RedactError {
  static override readonly marker: string = "loopguard.error.DetectorError";
  constructor(message: string, options?: { cause?: unknown }) {
    super("detector_contract", message, options);
  }
}

/**
 * A vault key is missing, unreadable or wrong: no `LOOPGUARD_VAULT_KEY`, a key id the provider
 * does not hold, a key that does not decrypt what was written under it. Code `vault_key`.
 */
export class VaultKeyError extends RedactError {
  static override readonly marker: string = "loopguard.error.VaultKeyError";
  constructor(message: string, options?: { cause?: unknown }) {
    super("vault_key", message, options);
  }
}

/** Stored vault data is damaged: a line that is not a sealed entry, a failed tag check. Code `vault_data`. */
export class VaultDataError extends RedactError {
  static override readonly marker: string = "loopguard.error.VaultDataError";
  constructor(message: string, options?: { cause?: unknown }) {
    super("vault_data", message, options);
  }
}

/** A subject's data was forgotten (crypto-shredded) and a value of it is asked for. Code `vault_forgotten`. */
export class VaultForgottenError extends RedactError {
  static override readonly marker: string = "loopguard.error.VaultForgottenError";
  constructor(message: string) {
    super("vault_forgotten", message);
  }
}
