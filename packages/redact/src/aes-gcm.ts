import { gcm } from "@noble/ciphers/aes";

/** `count` random bytes from Web Crypto's `getRandomValues` (Node 20, Bun, Deno, Workers). */
export function randomBytes(count: number): Uint8Array {
  const bytes = new Uint8Array(count);
  globalThis.crypto.getRandomValues(bytes);
  return bytes;
}

/**
 * AES-256-GCM with a random 12-byte IV, through `@noble/ciphers` (synchronous, pure, audited),
 * so sealing needs no `node:crypto`: the result is IV, ciphertext and 16-byte tag, the same
 * layout `node:crypto` produced before, so values sealed by either open with the other.
 */
export function sealAesGcm(key: Uint8Array, plaintext: Uint8Array, aad: Uint8Array): Uint8Array {
  const iv = randomBytes(12);
  const sealed = gcm(key, iv, aad).encrypt(plaintext);
  const out = new Uint8Array(12 + sealed.length);
  out.set(iv, 0);
  out.set(sealed, 12);
  return out;
}

/** Opens what {@link sealAesGcm} sealed; throws when the key, the AAD or a byte is wrong. */
export function openAesGcm(key: Uint8Array, sealed: Uint8Array, aad: Uint8Array): Uint8Array {
  if (sealed.length < 12 + 16) throw new Error("sealed data shorter than IV and tag");
  return gcm(key, sealed.subarray(0, 12), aad).decrypt(sealed.subarray(12));
}
