/**
 * Other readings of a sink argument's string, for detection taint (which folds and refuses):
 * the host a URL parser reaches (WHATWG URL drops tabs and newlines, reads `\` as `/` and the
 * text before `@` as user info), punycode labels decoded to the Unicode a look-alike was
 * written in, spelled-out separators (`at`, `dot`, `(at)`) as `@` and `.`, and base64 decoded.
 */

const base = 36;

/** Decodes one punycode label body (after `xn--`), RFC 3492; `undefined` when it is not valid. */
export function decodePunycode(input: string): string | undefined {
  const output: number[] = [];
  const basic = input.lastIndexOf("-");
  for (let index = 0; index < Math.max(0, basic); index++) {
    const code = input.charCodeAt(index);
    if (code >= 0x80) return undefined;
    output.push(code);
  }
  let n = 128;
  let bias = 72;
  let i = 0;
  for (let at = basic > 0 ? basic + 1 : 0; at < input.length; ) {
    const old = i;
    for (let w = 1, k = base; ; k += base) {
      if (at >= input.length) return undefined;
      const code = input.charCodeAt(at++);
      const digit =
        code - 48 < 10 ? code - 22 : code - 65 < 26 ? code - 65 : code - 97 < 26 ? code - 97 : base;
      if (digit >= base) return undefined;
      i += digit * w;
      const t = k <= bias ? 1 : k >= bias + 26 ? 26 : k - bias;
      if (digit < t) break;
      w *= base - t;
      if (w > 0x7fffffff) return undefined;
    }
    const length = output.length + 1;
    let delta = i - old;
    delta = old === 0 ? Math.floor(delta / 700) : delta >> 1;
    delta += Math.floor(delta / length);
    let k = 0;
    for (; delta > 455; k += base) delta = Math.floor(delta / 35);
    bias = Math.floor(k + (36 * delta) / (delta + 38));
    n += Math.floor(i / length);
    i %= length;
    if (n > 0x10ffff || output.length > 63) return undefined;
    output.splice(i++, 0, n);
  }
  return String.fromCodePoint(...output);
}

/** A host with its `xn--` labels decoded (look-alikes then fold like any Unicode). */
export function unicodeHost(host: string): string {
  if (!host.includes("xn--")) return host;
  return host
    .split(".")
    .map((label) => (label.startsWith("xn--") ? (decodePunycode(label.slice(4)) ?? label) : label))
    .join(".");
}

const spelledAt = /\s*[([{<]\s*at\s*[)\]}>]\s*|\s+at\s+/gi;
const spelledDot = /\s*[([{<]\s*dot\s*[)\]}>]\s*|\s+dot\s+/gi;
const base64Leaf = /^[A-Za-z0-9+/]{16,}={0,2}$/;

/** The extra readings of one argument string (none for most strings). */
export function argumentReadings(item: string): string[] {
  const readings: string[] = [];
  const trimmed = item.trim();
  if (/^[a-z][a-z0-9+.-]{0,20}:/i.test(trimmed)) {
    try {
      const url = new URL(trimmed);
      if (url.hostname) readings.push(`${url.protocol}//${unicodeHost(url.hostname)}/`);
    } catch {
      // Not a URL a sink could fetch.
    }
  }
  if (item.includes("xn--"))
    readings.push(
      item.replace(
        /xn--[a-z0-9-]{1,59}/gi,
        (label) => decodePunycode(label.slice(4).toLowerCase()) ?? label,
      ),
    );
  if (/\bat\b|\bdot\b/i.test(item)) {
    const despelled = item.replace(spelledAt, "@").replace(spelledDot, ".");
    if (despelled !== item) readings.push(despelled);
  }
  if (base64Leaf.test(trimmed) && trimmed.length % 4 === 0) {
    const decoded = atob(trimmed);
    if (/^[\x20-\x7e]+$/.test(decoded)) readings.push(decoded);
  }
  return readings;
}
