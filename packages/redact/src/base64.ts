/** Base64 of bytes, without `Buffer` (every runtime has `btoa`). */
export function bytesToBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let start = 0; start < bytes.length; start += 0x8000)
    binary += String.fromCharCode(...bytes.subarray(start, start + 0x8000));
  return btoa(binary);
}

/**
 * Bytes of base64 (standard or URL-safe alphabet, whitespace ignored), without `Buffer`; text
 * that is not base64 gives an empty array, which every caller refuses by its length.
 */
export function base64ToBytes(text: string): Uint8Array {
  let binary: string;
  try {
    binary = atob(text.replace(/\s+/g, "").replace(/-/g, "+").replace(/_/g, "/"));
  } catch {
    return new Uint8Array(0);
  }
  const bytes = new Uint8Array(binary.length);
  for (let index = 0; index < binary.length; index++) bytes[index] = binary.charCodeAt(index);
  return bytes;
}
