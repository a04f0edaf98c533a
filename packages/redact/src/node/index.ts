/**
 * `@loopguard/redact/node`: the parts of the redact package that read and write files through
 * `node:fs` (Node, Bun and Deno): the master-key file provider and the subject key file store.
 * Everything else, the sealed vault and its AES-256-GCM included, is in the root entry, which
 * imports no `node:` module and runs on Workers too.
 */

export { type FileKeyProviderOptions, fileKeyProvider } from "../file-key-provider.js";
export { fileSubjectKeyStore } from "../file-subject-key-store.js";
