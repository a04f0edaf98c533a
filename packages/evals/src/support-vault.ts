import { type AgentOptions, InvalidArgumentError } from "@loopguard/core";
import {
  builtinDetector,
  DEFAULT_TYPES,
  type Detector,
  type DetectorMatch,
  Vault,
} from "@loopguard/redact";
import { companyDomain } from "./support-desk/fixtures.js";

/** Core's vault contract (`AgentOptions["vault"]`: `tokenize(text)`, `reveal(value)`). */
type CoreVault = NonNullable<AgentOptions["vault"]>;

/** One value the vault tokenised: replaying the entries in order rebuilds the same tokens. */
export interface VaultEntry {
  type: string;
  value: unknown;
  token: string;
}

/** Options of `supportVault`. */
export interface SupportVaultOptions {
  /** Entries of an earlier process (a crash, then a resume): replayed so old tokens reveal again. */
  entries?: readonly VaultEntry[];
  /**
   * Called synchronously with each new entry, before its token can reach the model or the log
   * (the CLI appends it to the run's 0600 vault file here).
   */
  onEntry?: (entry: VaultEntry) => void;
  /** Mail domains left readable (the company's own, so the policy can judge them). Default `acme-shop.com`. */
  readableDomains?: readonly string[];
}

/** The support desk's vault: core's `Vault` contract plus the entries that rebuild it. */
export interface SupportVault extends CoreVault {
  /** Every value tokenised so far, in order (hold them like the PII they are). */
  readonly entries: readonly VaultEntry[];
  /** How many distinct values it holds. */
  readonly size: number;
}

class RecordingVault extends Vault {
  readonly entries: VaultEntry[] = [];
  onEntry: ((entry: VaultEntry) => void) | undefined;

  override token(type: string, value: unknown): string {
    const before = this.size;
    const token = super.token(type, value);
    if (this.size > before) {
      const entry = { type, value, token };
      this.entries.push(entry);
      this.onEntry?.(entry);
    }
    return token;
  }
}

/** Finds email addresses, except those of the readable domains (company mail is not customer PII). */
function customerEmailDetector(readable: readonly string[]): Detector {
  const inner = builtinDetector("EMAIL");
  const suffixes = readable.map((domain) => `@${domain.toLowerCase()}`);
  return {
    type: "EMAIL",
    name: "customer-email",
    ...(inner.priority !== undefined ? { priority: inner.priority } : {}),
    ...(inner.maxLength !== undefined ? { maxLength: inner.maxLength } : {}),
    *find(text: string): Iterable<DetectorMatch> {
      for (const match of inner.find(text)) {
        const address = text.slice(match.start, match.end).toLowerCase();
        if (!suffixes.some((suffix) => address.endsWith(suffix))) yield match;
      }
    },
  };
}

/**
 * Creates the support desk's reversible vault (on `@loopguard/redact`'s `Vault`): the task and
 * every tool output are tokenised (`<EMAIL_1>`, `<PHONE_1>`, `<SECRET_1>`, ...) before the model
 * or the event log sees them, and tool arguments are revealed when a tool runs. Company
 * addresses stay readable so the policy can tell them from outside ones. Entries replay into
 * a new vault with the same tokens, so a run resumed in a new process reveals what the first
 * process tokenised.
 *
 * @example
 * const vault = supportVault();
 * const agent = createAgent({ ...options, vault });
 * // after a crash, in a new process, with the entries kept beside the run:
 * const again = supportVault({ entries: vault.entries });
 */
export function supportVault(options: SupportVaultOptions = {}): SupportVault {
  if (options === null || typeof options !== "object")
    throw new InvalidArgumentError("[evals] supportVault(options): options must be an object");
  if (
    options.readableDomains !== undefined &&
    (!Array.isArray(options.readableDomains) ||
      options.readableDomains.some((domain) => typeof domain !== "string" || domain === ""))
  )
    throw new InvalidArgumentError(
      `[evals] supportVault: readableDomains must be an array of mail domains such as ["acme-shop.com"], got ${JSON.stringify(options.readableDomains)}`,
    );
  if (options.entries !== undefined && !Array.isArray(options.entries))
    throw new InvalidArgumentError(
      "[evals] supportVault: entries must be the array a previous vault's entries held (read back from the run's vault file)",
    );
  if (options.onEntry !== undefined && typeof options.onEntry !== "function")
    throw new InvalidArgumentError(
      "[evals] supportVault: onEntry must be a function (entry) => void that saves each new entry",
    );
  const vault = new RecordingVault({
    types: DEFAULT_TYPES.filter((type) => type !== "EMAIL"),
    detectors: [customerEmailDetector(options.readableDomains ?? [companyDomain])],
  });
  for (const entry of options.entries ?? []) {
    if (
      !entry ||
      typeof entry.type !== "string" ||
      typeof entry.token !== "string" ||
      vault.token(entry.type, entry.value) !== entry.token
    )
      throw new InvalidArgumentError(
        `[evals] supportVault: the saved entries do not replay to the same tokens (at ${JSON.stringify(entry?.token)}); the vault file is damaged or from another run`,
      );
  }
  vault.onEntry = options.onEntry;
  const describe = () => `SupportVault(${vault.size} values)`;
  const result = {
    tokenize: (text: string) => vault.redact(text).text,
    reveal: <T>(value: T): T => vault.reveal(value),
    get size() {
      return vault.size;
    },
    // Serialising or logging the vault shows its size, never a value.
    toJSON: () => ({ kind: "support-vault", size: vault.size }),
    toString: describe,
    [Symbol.for("nodejs.util.inspect.custom")]: describe,
  };
  Object.defineProperty(result, "entries", { get: () => vault.entries, enumerable: false });
  return result as typeof result & { readonly entries: readonly VaultEntry[] };
}
