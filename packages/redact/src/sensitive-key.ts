import { RedactOptionsError } from "./redact-error.js";

const ALWAYS = new Set([
  "password",
  "passwd",
  "pwd",
  "pass",
  "passphrase",
  "passcode",
  "secret",
  "secrets",
  "authorization",
  "cookie",
  "cookies",
  "credential",
  "credentials",
  "apikey",
  "privatekey",
  "jwt",
  "bearer",
  "sessionid",
  "ssn",
  "cvv",
  "cvc",
  "contrasena",
  "contraseña",
  "otp",
  "totp",
  "mfa",
  "pin",
]);
/** Words that make a following `key` sensitive: `api_key`, `privateKey`, `AccountKey`. */
const KEY_QUALIFIERS = new Set([
  "api",
  "private",
  "secret",
  "access",
  "auth",
  "client",
  "account",
  "service",
  "db",
  "database",
  "signing",
  "encryption",
  "master",
  "session",
  "priv",
  "app",
]);
/** Words after `token` that make it metadata, not a token: `token_count`, `tokenType`. */
const TOKEN_METADATA = new Set([
  "count",
  "counts",
  "type",
  "limit",
  "limits",
  "usage",
  "url",
  "uri",
  "endpoint",
  "expiry",
  "expires",
  "expiration",
  "ttl",
  "length",
  "index",
  "budget",
  "estimate",
  "name",
]);

/** Splits an identifier into lower-case words: `x-api-key` → x, api, key; `accessToken` → access, token. */
export function keyWords(key: string): string[] {
  return key
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9ñ]+/)
    .filter((word) => word.length > 0);
}

/**
 * Whether a property, header or variable name marks its value as a secret: `password`,
 * `db_pass`, `x-api-key`, `accessToken`, `Authorization`, `set-cookie`, `client_secret`.
 * Counts and settings that merely mention tokens (`max_tokens`, `token_count`) are not.
 */
export function isSensitiveKey(key: string): boolean {
  if (typeof key !== "string") {
    throw new RedactOptionsError(
      `[redact] isSensitiveKey(key) takes a string; got ${key === null ? "null" : typeof key}.`,
    );
  }
  if (key.length === 0 || key.length > 128) return false;
  let known = cache.get(key);
  if (known === undefined) {
    known = classify(key);
    // Key names repeat endlessly in logs; a bounded cache makes the check a map lookup.
    if (cache.size >= 2048) cache.clear();
    cache.set(key, known);
  }
  return known;
}

const cache = new Map<string, boolean>();

function classify(key: string): boolean {
  const words = keyWords(key);
  if (words.length === 0) return false;
  if (words.length === 1 && words[0] === "auth") return true;
  for (let index = 0; index < words.length; index++) {
    const word = words[index]!;
    if (ALWAYS.has(word)) return true;
    if (word.startsWith("passw") || (word.startsWith("secret") && word !== "secretary"))
      return true;
    if (word === "token") {
      const next = words[index + 1];
      if (next === undefined || !TOKEN_METADATA.has(next)) return true;
    }
    if (word.endsWith("token") && word.length > 5 && !word.endsWith("tokens")) {
      // accesstoken, authtoken, refreshtoken written as one word
      const next = words[index + 1];
      if (next === undefined || !TOKEN_METADATA.has(next)) return true;
    }
    if (word === "key" && index > 0 && KEY_QUALIFIERS.has(words[index - 1]!)) return true;
    if (word.endsWith("key") && word.length > 3) {
      const stem = word.slice(0, -3);
      if (KEY_QUALIFIERS.has(stem)) return true;
    }
  }
  return false;
}
