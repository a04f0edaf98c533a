// What `@loopguard/redact/node` resolves to on a runtime without a file system (the "workerd",
// "edge-light" and "browser" export conditions): a clear error at import, not a failed
// resolution of node:fs deep in a bundle.
throw new Error(
  '[redact] @loopguard/redact/node (fileKeyProvider, fileSubjectKeyStore) needs node:fs, which this runtime does not have. Import from "@loopguard/redact" instead: envKeyProvider({ env }) takes the master keys from your Worker\'s env (a secret), kmsKeyProvider({ wrap, unwrap }) from your KMS, and createKeyring({ store }) takes any SubjectKeyStore (memorySubjectKeyStore() or a database table of your own).',
);
