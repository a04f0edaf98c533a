/** A bounded cache from short strings to strings, keeping the recently used ones. @internal */
export interface StringCache {
  get(key: string): string | undefined;
  set(key: string, value: string): void;
  /** How many entries it holds, at most `maxEntries`. */
  readonly size: number;
}

/**
 * Creates a cache of at most `maxEntries` strings, each key at most `maxKeyLength` characters
 * (longer keys are never stored), so its memory stays bounded. Two generations approximate
 * least-recently-used at the cost of one `Map` lookup per hit: new entries go to the young
 * generation; when it holds half the entries it becomes the old one and the previous old one
 * is dropped; a hit in the old generation moves back to the young one. An entry used at least
 * once per `maxEntries / 2` insertions is never dropped.
 *
 * @example
 * const cache = createStringCache(4, 64);
 * cache.set("a", "A");
 * cache.get("a"); // "A"
 */
export function createStringCache(maxEntries: number, maxKeyLength: number): StringCache {
  const half = Math.max(1, Math.floor(maxEntries / 2));
  let young = new Map<string, string>();
  let old = new Map<string, string>();
  const insert = (key: string, value: string) => {
    if (young.size >= half) {
      old = young;
      young = new Map();
    }
    young.set(key, value);
  };
  return {
    get(key) {
      const value = young.get(key);
      if (value !== undefined) return value;
      const aged = old.get(key);
      if (aged !== undefined) {
        old.delete(key);
        insert(key, aged);
      }
      return aged;
    },
    set(key, value) {
      if (key.length > maxKeyLength || maxEntries < 2) return;
      if (young.has(key)) young.set(key, value);
      else {
        old.delete(key);
        insert(key, value);
      }
    },
    get size() {
      return young.size + old.size;
    },
  };
}
