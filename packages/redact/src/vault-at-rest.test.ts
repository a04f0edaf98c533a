import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { fileKeyProvider } from "./file-key-provider.js";
import { fileSubjectKeyStore } from "./file-subject-key-store.js";
import { RedactError, VaultDataError, VaultForgottenError, VaultKeyError } from "./redact-error.js";
import { openSealedVault } from "./sealed-vault.js";
import {
  createKeyring,
  memorySubjectKeyStore,
  openVaultEntry,
  sealVaultEntry,
} from "./subject-keys.js";
import { envKeyProvider, generateVaultKey, kmsKeyProvider } from "./vault-keys.js";

const dir = mkdtempSync(join(tmpdir(), "redact-vault-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const entry = { type: "EMAIL", token: "<EMAIL_1>", value: "jane@acme.io" };

describe("sealed entries", () => {
  it("round-trip any value, and the sealed form holds none of it", () => {
    const key = new Uint8Array(32).fill(7);
    fc.assert(
      fc.property(fc.string({ minLength: 4 }), fc.jsonValue(), (text, json) => {
        for (const value of [text, json]) {
          const sealed = sealVaultEntry(key, "cust_1", { ...entry, value });
          if (typeof value === "string" && value.length >= 8)
            expect(JSON.stringify(sealed)).not.toContain(value);
          expect(openVaultEntry(key, sealed).value).toEqual(JSON.parse(JSON.stringify(value)));
        }
      }),
      { numRuns: 50 },
    );
  });

  it("are bound to subject and token: moved or changed, they do not open", () => {
    const key = new Uint8Array(32).fill(1);
    const sealed = sealVaultEntry(key, "cust_1", entry);
    expect(() => openVaultEntry(key, { ...sealed, token: "<EMAIL_2>" })).toThrow(VaultDataError);
    expect(() => openVaultEntry(key, { ...sealed, subject: "cust_2" })).toThrow(
      /^\[redact\] the sealed value of <EMAIL_2>|^\[redact\] the sealed value of <EMAIL_1>/,
    );
    // Another key than the one that sealed it: that key is gone (forgotten or replaced).
    expect(() => openVaultEntry(new Uint8Array(32).fill(2), sealed)).toThrow(VaultForgottenError);
    // The ciphertext changed: the GCM tag does not check.
    const bytes = Buffer.from(sealed.sealed, "base64");
    bytes[14] = bytes[14]! ^ 1;
    expect(() => openVaultEntry(key, { ...sealed, sealed: bytes.toString("base64") })).toThrow(
      /does not open: the data was changed/,
    );
    expect(() => openVaultEntry(undefined, sealed)).toThrow(VaultForgottenError);
  });
});

describe("key providers", () => {
  it("env: missing, malformed and unknown keys are clear [redact] errors", () => {
    expect(() => envKeyProvider({ env: {} })).toThrow(
      /^\[redact\] envKeyProvider: LOOPGUARD_VAULT_KEY is not set/,
    );
    expect(() => envKeyProvider({ env: { LOOPGUARD_VAULT_KEY: "k1:abc" } })).toThrow(VaultKeyError);
    const provider = envKeyProvider({ env: { LOOPGUARD_VAULT_KEY: generateVaultKey("k1") } });
    expect(() => provider.unwrapKey({ keyId: "k9", wrapped: "AAAA" })).toThrow(/holds no key "k9"/);
  });

  it("file: refuses a key file others can read, and makes one on request", () => {
    const path = join(dir, "open.key");
    writeFileSync(path, `${generateVaultKey("k1")}\n`);
    chmodSync(path, 0o644);
    expect(() => fileKeyProvider({ path })).toThrow(
      /can be read by others \(mode 644\); run chmod 600/,
    );
    const made = fileKeyProvider({ path: join(dir, "made.key"), create: true });
    const key = new Uint8Array(32).fill(3);
    expect(Buffer.from(made.unwrapKey(made.wrapKey(key) as never) as Uint8Array)).toEqual(
      Buffer.from(key),
    );
    expect(() => fileKeyProvider({ path: join(dir, "absent.key") })).toThrow(
      /cannot read the key file/,
    );
  });

  it("KMS: callbacks wrap and unwrap; a failing KMS is a VaultKeyError with the cause", async () => {
    const kmsKeys = new Map<string, Uint8Array>();
    const provider = kmsKeyProvider({
      wrap: async (dataKey) => {
        const id = `w${kmsKeys.size}`;
        kmsKeys.set(id, Uint8Array.from(dataKey));
        return { keyId: "alias/loopguard", wrapped: id };
      },
      unwrap: async ({ wrapped }) => kmsKeys.get(wrapped)!,
    });
    const keyring = createKeyring({ keys: provider, store: memorySubjectKeyStore() });
    const key = await keyring.dataKey("cust_1");
    expect(await keyring.dataKey("cust_1")).toBe(key);
    expect(() => keyring.dataKeySync("cust_2")).toThrow(/answered with a Promise/);
    const failing = kmsKeyProvider({
      wrap: () => {
        throw new Error("AccessDenied");
      },
      unwrap: () => new Uint8Array(32),
    });
    const error = await createKeyring({ keys: failing, store: memorySubjectKeyStore() })
      .dataKey("cust_1")
      .catch((caught: unknown) => caught);
    expect(RedactError.isInstance(error)).toBe(true);
    expect((error as Error).message).toBe("[redact] kms: wrap failed: AccessDenied");
  });
});

describe("the keyring", () => {
  it("one key per subject; forget crypto-shreds; rotate rewraps under the new master key", async () => {
    const store = fileSubjectKeyStore({ path: join(dir, "keys", "subject-keys.json") });
    const k1 = generateVaultKey("k1");
    const old = createKeyring({
      keys: envKeyProvider({ env: { LOOPGUARD_VAULT_KEY: k1 } }),
      store,
    });
    const a = old.dataKeySync("cust_a");
    const b = old.dataKeySync("cust_b");
    expect(Buffer.from(a).equals(Buffer.from(b))).toBe(false);
    const sealed = sealVaultEntry(a, "cust_a", entry);
    // Rotation: k2 first, k1 kept until rotate() has rewrapped every data key.
    const k2 = generateVaultKey("k2");
    const both = createKeyring({
      keys: envKeyProvider({ env: { LOOPGUARD_VAULT_KEY: `${k2},${k1}` } }),
      store,
    });
    expect(await both.rotate()).toBe(2);
    expect((await store.list()).map((record) => record.keyId)).toEqual(["k2", "k2"]);
    const onlyNew = createKeyring({
      keys: envKeyProvider({ env: { LOOPGUARD_VAULT_KEY: k2 } }),
      store,
    });
    expect(openVaultEntry(await onlyNew.existingKey("cust_a"), sealed).value).toBe("jane@acme.io");
    // Forget: the key is gone from the store; the sealed copy can never open again.
    expect(await onlyNew.forget("cust_a")).toBe(true);
    expect(store.get("cust_a")).toBeUndefined();
    const fresh = createKeyring({
      keys: envKeyProvider({ env: { LOOPGUARD_VAULT_KEY: k2 } }),
      store,
    });
    expect(() => openVaultEntry(fresh.existingKeySync("cust_a"), sealed)).toThrow(
      /^\[redact\] <EMAIL_1> belongs to subject "cust_a", whose data was forgotten/,
    );
    expect(fresh.existingKeySync("cust_b")).toBeDefined();
  });

  it("a damaged key store is a clear error naming the file", () => {
    const path = join(dir, "broken.json");
    writeFileSync(path, "{not json");
    expect(() => fileSubjectKeyStore({ path }).get("x")).toThrow(
      /^\[redact\] the subject key file .*broken\.json is damaged/,
    );
  });
});

describe("openSealedVault", () => {
  const keyringFor = (store = memorySubjectKeyStore()) =>
    createKeyring({
      keys: envKeyProvider({ env: { LOOPGUARD_VAULT_KEY: generateVaultKey("k1") } }),
      store,
    });

  /** A sealed vault for subject `cust_42` on a fresh keyring, keeping what it seals in `stored`. */
  const sealedCustomer = async () => {
    const keyring = keyringFor();
    const stored: import("./subject-keys.js").SealedVaultEntry[] = [];
    const vault = await openSealedVault({
      keyring,
      subject: "cust_42",
      onSealed: (entry) => stored.push(entry),
    });
    return { keyring, stored, vault };
  };

  it("seals each new value before its token is handed out, and replays into the same tokens", async () => {
    const { keyring, stored, vault } = await sealedCustomer();
    const text = vault.tokenize("Maya Lindqvist, jane@acme.io, born 12 March 1984");
    expect(text).toBe("<PERSON_1>, <EMAIL_1>, born <DATE_OF_BIRTH_1>");
    expect(stored).toHaveLength(3);
    expect(JSON.stringify(stored)).not.toMatch(/Maya|jane@|1984/);
    const again = await openSealedVault({ keyring, subject: "cust_42", sealed: stored });
    expect(again.reveal(text)).toBe("Maya Lindqvist, jane@acme.io, born 12 March 1984");
    expect(again.tokenize("mail jane@acme.io")).toBe("mail <EMAIL_1>");
  });

  it("forget(subject) makes its tokens unrevealable here and in every later vault; tokens stay tokens", async () => {
    const { keyring, stored, vault } = await sealedCustomer();
    const text = vault.tokenize("refund jane@acme.io");
    expect(await vault.forget("cust_42")).toBe(true);
    expect(() => vault.reveal({ to: text })).toThrow(
      /^\[redact\] <EMAIL_1> cannot be revealed: its subject "cust_42" was forgotten/,
    );
    const later = await openSealedVault({ keyring, subject: "cust_42", sealed: stored });
    expect(() => later.reveal(text)).toThrow(VaultForgottenError);
    expect(later.reveal("no token")).toBe("no token");
    expect(later.tokenize("mail other@acme.io")).toBe("mail <EMAIL_2>");
  });

  it("refuses entries out of order, and values past retention are not revealed", async () => {
    const keyring = keyringFor();
    const stored: import("./subject-keys.js").SealedVaultEntry[] = [];
    let now = 0;
    const vault = await openSealedVault({
      keyring,
      subject: "s",
      onSealed: (entry) => stored.push(entry),
      now: () => now,
    });
    vault.tokenize("a@acme.io b@acme.io");
    await expect(
      openSealedVault({ keyring, subject: "s", sealed: [...stored].reverse() }),
    ).rejects.toThrow(/do not replay to the same tokens/);
    now = 40 * 86_400_000;
    const expired = await openSealedVault({
      keyring,
      subject: "s",
      sealed: stored,
      retentionMs: 30 * 86_400_000,
      now: () => now,
    });
    expect(() => expired.reveal("<EMAIL_2>")).toThrow(/outlived the retention of 30 days/);
  });
});
