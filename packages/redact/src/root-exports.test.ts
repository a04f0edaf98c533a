import { describe, expect, it } from "vitest";
import * as root from "./index.js";

// The root holds what users use. An export added here is a decision: add it to this list in
// the same change.
describe("@loopguard/redact's root exports", () => {
  it("are exactly the reviewed list", () => {
    expect(Object.keys(root).sort()).toEqual([
      "BUILTIN_TYPES",
      "DEFAULT_THRESHOLD",
      "DEFAULT_TYPES",
      "DetectorError",
      "LANGUAGES",
      "PATTERN_TYPES",
      "RedactError",
      "RedactOptionsError",
      "SealedVault",
      "Vault",
      "VaultDataError",
      "VaultForgottenError",
      "VaultKeyError",
      "builtinDetector",
      "createKeyring",
      "createRedactionScope",
      "createRedactionStream",
      "createRedactor",
      "createVault",
      "dataKeyId",
      "envKeyProvider",
      "generateVaultKey",
      "isSealedVaultEntry",
      "isSensitiveKey",
      "kmsKeyProvider",
      "memorySubjectKeyStore",
      "openSealedVault",
      "openVaultEntry",
      "patchConsole",
      "patternDetector",
      "pinoRedaction",
      "redact",
      "redactDeep",
      "redactFormat",
      "sealVaultEntry",
    ]);
  });
});
