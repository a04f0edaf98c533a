/**
 * `bytes` random bytes as lowercase hex, from the Web Crypto `getRandomValues` every runtime
 * has (Node 20, Bun, Deno, Workers): run, call and approval ids.
 */
export function randomHex(bytes: number): string {
  const buffer = new Uint8Array(bytes);
  globalThis.crypto.getRandomValues(buffer);
  let hex = "";
  for (const byte of buffer) hex += byte.toString(16).padStart(2, "0");
  return hex;
}
