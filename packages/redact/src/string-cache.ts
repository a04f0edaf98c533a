/** A bounded least-recently-used map from short strings to strings. @internal */
export interface StringCache {
  get(key: string): string | undefined;
  set(key: string, value: string): void;
  readonly size: number;
}

/**
 * Creates a least-recently-used cache of at most `maxEntries` strings, each key at most
 * `maxKeyLength` characters (longer keys are never stored), so its memory stays bounded. A
 * `Map` keeps insertion order: a hit moves its entry to the end, a full cache drops the first.
 *
 * @example
 * const cache = createStringCache(2, 64);
 * cache.set("a", "A"); cache.set("b", "B"); cache.get("a"); cache.set("c", "C");
 * cache.get("b"); // undefined: "b" was the least recently used
 */
export function createStringCache(maxEntries: number, maxKeyLength: number): StringCache {
  const entries = new Map<string, string>();
  return {
    get(key) {
      const value = entries.get(key);
      if (value !== undefined && entries.size > 1) {
        entries.delete(key);
        entries.set(key, value);
      }
      return value;
    },
    set(key, value) {
      if (key.length > maxKeyLength || maxEntries <= 0) return;
      if (entries.size >= maxEntries && !entries.has(key)) {
        entries.delete(entries.keys().next().value as string);
      }
      entries.set(key, value);
    },
    get size() {
      return entries.size;
    },
  };
}
