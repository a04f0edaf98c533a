/**
 * `@loopguard/policy/internal`: pieces the policy package's own benchmarks and sibling tools
 * use, kept off the root so the root holds only what users use. No stability promise: these
 * may change in any release.
 */

export { parseFreezeFile } from "../freeze-file.js";
export type { GlobMatcher } from "../glob.js";
export { compileGlob } from "../glob.js";
export { normalizeValue } from "../normalize-value.js";
export { isPredicate } from "../predicate.js";
