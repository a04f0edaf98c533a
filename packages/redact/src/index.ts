export {
  BUILTIN_TYPES,
  type BuiltinType,
  builtinDetector,
  DEFAULT_TYPES,
  PATTERN_TYPES,
} from "./builtin-detectors.js";
export { type CreateRedactorOptions, createRedactor, type Redactor } from "./create-redactor.js";
export {
  type Detector,
  type DetectorMatch,
  type Finding,
  LANGUAGES,
  type Language,
} from "./detector.js";
export { type PatchConsoleOptions, patchConsole } from "./patch-console.js";
export { type PatternDetectorOptions, patternDetector } from "./pattern-detector.js";
export { type PinoRedactionOptions, pinoRedaction } from "./pino-redaction.js";
export { redact } from "./redact.js";
export { type RedactDeepOptions, redactDeep } from "./redact-deep.js";
export {
  DetectorError,
  RedactError,
  RedactOptionsError,
  VaultDataError,
  VaultForgottenError,
  VaultKeyError,
} from "./redact-error.js";
export {
  DEFAULT_THRESHOLD,
  type Placeholder,
  type RedactOptions,
  type RedactResult,
} from "./redaction-engine.js";
export { createRedactionScope, type RedactionScope } from "./redaction-scope.js";
export { createRedactionStream, type RedactionStreamOptions } from "./redaction-stream.js";
export { openSealedVault, SealedVault, type SealedVaultOptions } from "./sealed-vault.js";
export { isSensitiveKey } from "./sensitive-key.js";
export {
  createKeyring,
  dataKeyId,
  isSealedVaultEntry,
  type Keyring,
  type KeyringOptions,
  memorySubjectKeyStore,
  openVaultEntry,
  type SealedVaultEntry,
  type SubjectKeyRecord,
  type SubjectKeyStore,
  sealVaultEntry,
  type VaultEntryInClear,
} from "./subject-keys.js";
export { createVault, Vault, type VaultOptions } from "./vault.js";
export {
  type EnvKeyProviderOptions,
  envKeyProvider,
  generateVaultKey,
  type KeyProvider,
  type KmsKeyProviderOptions,
  kmsKeyProvider,
  type WrappedKey,
} from "./vault-keys.js";
export { redactFormat, type WinstonFormat, type WinstonInfo } from "./winston-redaction.js";
