// The corpus generators' seeded random source (mulberry32): the same seed gives the same
// numbers, and so the same corpus bytes, on every machine.

/**
 * A seeded random source and the draws the generators make from it: `random()` in [0, 1),
 * `int(low, high)` inclusive, `pick(list)`, `digits(count)` (a string of decimal digits) and
 * `pad(value, width)` (zero-padded, draws nothing).
 */
export function seededRandom(seed) {
  let state = seed >>> 0;
  const random = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (low, high) => low + Math.floor(random() * (high - low + 1));
  const pick = (list) => list[Math.floor(random() * list.length)];
  const digits = (count) => Array.from({ length: count }, () => String(int(0, 9))).join("");
  const pad = (value, width) => String(value).padStart(width, "0");
  return { random, int, pick, digits, pad };
}
