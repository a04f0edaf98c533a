import type { Detector } from "./detector.js";
import { addressDetector } from "./detectors/address-detector.js";
import { creditCardDetector } from "./detectors/credit-card-detector.js";
import { dateOfBirthDetector } from "./detectors/date-of-birth-detector.js";
import { emailDetector } from "./detectors/email-detector.js";
import { ibanDetector } from "./detectors/iban-detector.js";
import { ipAddressDetector } from "./detectors/ip-address-detector.js";
import { macAddressDetector } from "./detectors/mac-address-detector.js";
import { personDetector } from "./detectors/person-detector.js";
import { phoneDetector } from "./detectors/phone-detector.js";
import { secretDetector } from "./detectors/secret-detector.js";
import { urlDetector } from "./detectors/url-detector.js";
import { usSsnDetector } from "./detectors/us-ssn-detector.js";
import { RedactOptionsError } from "./redact-error.js";

/** The type of a built-in detector. */
export type BuiltinType =
  | "EMAIL"
  | "PHONE"
  | "CREDIT_CARD"
  | "US_SSN"
  | "IBAN"
  | "IP_ADDRESS"
  | "MAC_ADDRESS"
  | "SECRET"
  | "URL"
  | "PERSON"
  | "ADDRESS"
  | "DATE_OF_BIRTH";

/** Every built-in type, including those off by default. */
export const BUILTIN_TYPES: readonly BuiltinType[] = [
  "SECRET",
  "EMAIL",
  "CREDIT_CARD",
  "IBAN",
  "US_SSN",
  "IP_ADDRESS",
  "MAC_ADDRESS",
  "PHONE",
  "ADDRESS",
  "DATE_OF_BIRTH",
  "PERSON",
  "URL",
];

/**
 * The built-in types found by their pattern and check digits alone, with no reading of the
 * words around them for names, addresses or birth dates: `types: PATTERN_TYPES` is the fast
 * configuration for hot paths.
 */
export const PATTERN_TYPES: readonly BuiltinType[] = [
  "SECRET",
  "EMAIL",
  "CREDIT_CARD",
  "IBAN",
  "US_SSN",
  "IP_ADDRESS",
  "MAC_ADDRESS",
  "PHONE",
];

/** The built-in types that run when `types` is not given: all but URL. */
export const DEFAULT_TYPES: readonly BuiltinType[] = BUILTIN_TYPES.filter((type) => type !== "URL");

const FACTORIES: Record<BuiltinType, () => Detector> = {
  EMAIL: emailDetector,
  PHONE: phoneDetector,
  CREDIT_CARD: creditCardDetector,
  US_SSN: usSsnDetector,
  IBAN: ibanDetector,
  IP_ADDRESS: ipAddressDetector,
  MAC_ADDRESS: macAddressDetector,
  SECRET: secretDetector,
  URL: urlDetector,
  PERSON: personDetector,
  ADDRESS: addressDetector,
  DATE_OF_BIRTH: dateOfBirthDetector,
};

const cache = new Map<BuiltinType, Detector>();

/**
 * The built-in detector for one type. Detectors are stateless and shared.
 *
 * @example
 * const detector = builtinDetector("EMAIL");
 * [...detector.find("mail a@b.io")]; // [{ start: 5, end: 11 }]
 */
export function builtinDetector(type: BuiltinType): Detector {
  let detector = cache.get(type);
  if (detector === undefined) {
    if (!Object.hasOwn(FACTORIES, type)) {
      throw new RedactOptionsError(
        `[redact] builtinDetector: unknown type ${typeof type === "string" ? JSON.stringify(type) : String(type)}; use one of ${BUILTIN_TYPES.join(", ")}, or patternDetector for a type of your own.`,
      );
    }
    detector = FACTORIES[type]();
    cache.set(type, detector);
  }
  return detector;
}
