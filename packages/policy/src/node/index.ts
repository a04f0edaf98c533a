/**
 * `@loopguard/policy/node`: the parts of the policy package that read and write files through
 * `node:fs` (Node, Bun and Deno): the file freeze store and the policy file loader. Everything
 * else is in the root entry, which imports no `node:` module and runs on Workers too.
 */

export type { FileFreezeStoreOptions } from "../file-freeze-store.js";
export { fileFreezeStore } from "../file-freeze-store.js";
export { type FreezeFile, freezeFileSchema } from "../freeze-file.js";
export { loadPolicyFile } from "../load-policy-file.js";
