import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateVaultKey, RedactError } from "@loopguard/redact";
import { afterAll, describe, expect, it } from "vitest";
import { forgetSubject, pruneVault, runVault, vaultKeys } from "../src/run-vault.js";
import { built, run, runIdOf, sensitive } from "./cli-helpers.js";

const root = mkdtempSync(join(tmpdir(), "loopguard-vault-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let count = 0;
const freshDir = () => join(root, `v${++count}`);

const customer = "Maya Lindqvist wrote from maya.lindqvist@example.com, card 4111 1111 1111 1111";
const plaintext = [
  "Maya Lindqvist",
  "maya.lindqvist@example.com",
  "4111 1111 1111 1111",
  "4111111111111111",
];

/** Every file under `dir`, read as text (sealed data is base64, keys are base64). */
function everyFile(dir: string): { name: string; text: string }[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => {
      const path = join(entry.parentPath, entry.name);
      return { name: path, text: readFileSync(path, "utf8") };
    });
}

describe("the run vault at rest", () => {
  it("seals every value (no plaintext in any file it wrote) and reveals it again from a new process's view", () => {
    const dir = freshDir();
    const first = runVault(dir, "run-1", { subject: "cust_42" });
    const tokenized = first.tokenize(customer);
    expect(tokenized).toMatch(/<PERSON_1>.*<EMAIL_1>.*<CREDIT_CARD_1>/);
    for (const file of everyFile(dir))
      for (const value of plaintext) expect(file.text, file.name).not.toContain(value);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    for (const file of everyFile(dir))
      expect(statSync(file.name).mode & 0o777, file.name).toBe(0o600);
    // A new vault over the same files (a resume in another process) reveals the same tokens.
    const again = runVault(dir, "run-1", { subject: "cust_42" });
    expect(again.reveal(tokenized)).toBe(customer);
    expect(again.tokenize("maya.lindqvist@example.com")).toBe("<EMAIL_1>");
  });

  it("forget(subject) crypto-shreds that customer in every run; tokens stay tokens, other subjects stay readable", async () => {
    const dir = freshDir();
    const a = runVault(dir, "run-a", { subject: "cust_42" }).tokenize(customer);
    const b = runVault(dir, "run-b", { subject: "cust_42" }).tokenize("call +1 415 555 0132");
    const other = runVault(dir, "run-c", { subject: "cust_7" }).tokenize("mail amara@example.org");
    const result = await forgetSubject(dir, "cust_42");
    expect(result).toEqual({ subject: "cust_42", forgotten: true, values: 4, runs: 2 });
    for (const [runId, text] of [
      ["run-a", a],
      ["run-b", b],
    ] as const) {
      const vault = runVault(dir, runId, { subject: "cust_42" });
      let error: unknown;
      try {
        vault.reveal({ to: text });
      } catch (caught) {
        error = caught;
      }
      expect(RedactError.isInstance(error)).toBe(true);
      expect((error as Error).message).toMatch(
        /^\[redact\] <[A-Z_]+_1> cannot be revealed: its subject "cust_42" was forgotten/,
      );
      // Text without the forgotten tokens still reveals; new values never take an old token.
      expect(vault.reveal("no tokens here")).toBe("no tokens here");
    }
    expect(runVault(dir, "run-a", { subject: "cust_42" }).tokenize("mail new@example.com")).toBe(
      "mail <EMAIL_2>",
    );
    expect(runVault(dir, "run-c", { subject: "cust_7" }).reveal(other)).toBe(
      "mail amara@example.org",
    );
    // New data of the subject gets a new key; a subject never seen has nothing to forget.
    expect(await forgetSubject(dir, "cust_42")).toMatchObject({ forgotten: true });
    expect(await forgetSubject(dir, "nobody")).toEqual({
      subject: "nobody",
      forgotten: false,
      values: 0,
      runs: 0,
    });
  });

  it("a wrong or missing key is a clear [redact] error and nothing is revealed", () => {
    const dir = freshDir();
    const env = { LOOPGUARD_VAULT_KEY: generateVaultKey("k1") };
    runVault(dir, "run-1", { keys: vaultKeys(dir, env) }).tokenize(customer);
    const wrong = { LOOPGUARD_VAULT_KEY: generateVaultKey("k1") };
    expect(() => runVault(dir, "run-1", { keys: vaultKeys(dir, wrong) })).toThrow(
      /^\[redact\] env:LOOPGUARD_VAULT_KEY: key "k1" does not decrypt the data key/,
    );
    const rotatedAway = { LOOPGUARD_VAULT_KEY: generateVaultKey("k2") };
    expect(() => runVault(dir, "run-1", { keys: vaultKeys(dir, rotatedAway) })).toThrow(
      /^\[redact\] env:LOOPGUARD_VAULT_KEY holds no key "k1".*add that key after the current one/,
    );
    expect(() => vaultKeys(dir, { LOOPGUARD_VAULT_KEY: "k1:short" })).toThrow(
      /^\[redact\] env:LOOPGUARD_VAULT_KEY: key 1 is not "id:<32 bytes in base64>"/,
    );
    // Rotation: the new key first, the old one after it, reads what the old key wrote.
    const both = { LOOPGUARD_VAULT_KEY: `${generateVaultKey("k2")},${env.LOOPGUARD_VAULT_KEY}` };
    expect(runVault(dir, "run-1", { keys: vaultKeys(dir, both) }).reveal("<EMAIL_1>")).toBe(
      "maya.lindqvist@example.com",
    );
  });

  it("a damaged vault file is a clear [redact] error naming the file and line", () => {
    const dir = freshDir();
    runVault(dir, "run-1").tokenize(customer);
    const file = join(dir, "run-1.jsonl");
    const lines = readFileSync(file, "utf8").split("\n");
    writeFileSync(file, [lines[0], "{not json", ...lines.slice(1)].join("\n"));
    expect(() => runVault(dir, "run-1")).toThrow(
      /^\[redact\] the vault file .*run-1\.jsonl is damaged at line 2/,
    );
    // A sealed value changed on disk does not open (the GCM tag), and says where.
    const sealed = JSON.parse(lines[0]!) as { sealed: string };
    const flipped = Buffer.from(sealed.sealed, "base64");
    flipped[20] = flipped[20]! ^ 1;
    writeFileSync(
      file,
      [JSON.stringify({ ...sealed, sealed: flipped.toString("base64") }), ...lines.slice(1)].join(
        "\n",
      ),
    );
    expect(() => runVault(dir, "run-1")).toThrow(
      /^\[redact\] the sealed value of <[A-Z_]+_1>.*does not open.*line 1\)/,
    );
  });

  it("a file written in clear by an older version is sealed in place on first open", () => {
    const dir = freshDir();
    runVault(dir, "seed"); // makes the directory and the key
    const file = join(dir, "run-old.jsonl");
    writeFileSync(
      file,
      `${JSON.stringify({ type: "EMAIL", value: "old@example.com", token: "<EMAIL_1>" })}\n`,
      {
        mode: 0o600,
      },
    );
    expect(runVault(dir, "run-old").reveal("<EMAIL_1>")).toBe("old@example.com");
    expect(readFileSync(file, "utf8")).not.toContain("old@example.com");
    expect(runVault(dir, "run-old").reveal("<EMAIL_1>")).toBe("old@example.com");
  });

  it("retention by age: values past it are not revealed, and pruning removes them from disk", () => {
    const dir = freshDir();
    let now = 1_000_000;
    runVault(dir, "run-1", { now: () => now }).tokenize("mail jane@example.com");
    now += 40 * 86_400_000;
    expect(() =>
      runVault(dir, "run-1", { now: () => now, retentionMs: 30 * 86_400_000 }).reveal("<EMAIL_1>"),
    ).toThrow(
      /^\[redact\] <EMAIL_1> cannot be revealed: its value outlived the retention of 30 days/,
    );
    expect(pruneVault(dir, 30 * 86_400_000, now)).toBe(1);
    expect(readFileSync(join(dir, "run-1.jsonl"), "utf8")).toMatch(/"gone":"expired"/);
    expect(() => runVault(dir, "run-1").reveal("<EMAIL_1>")).toThrow(/cannot be revealed/);
    expect(runVault(dir, "run-1").tokenize("mail other@example.com")).toBe("mail <EMAIL_2>");
  });
});

describe.skipIf(!built)("a demo run through the built CLI", () => {
  it("writes no plaintext PII, names included, in any file (runs, trace JSON and HTML, vault, keys); forget works from the CLI", () => {
    const dir = freshDir();
    const result = run(["demo", "--dir", join(dir, "runs")]);
    expect(result.status, result.stderr).toBe(0);
    // The trace files too: trace.json and the HTML viewer.
    const traced = run([
      "trace",
      runIdOf(result.stdout),
      "--out",
      join(dir, "trace"),
      "--dir",
      join(dir, "runs"),
    ]);
    expect(traced.status, traced.stderr).toBe(0);
    const names = ["Maya Lindqvist", "Tomasz Wierzbicki", "Amara Okafor"];
    for (const file of everyFile(dir)) {
      // The ledger stands in for the payment provider: the real values are meant to reach it.
      if (file.name.includes("ledger")) continue;
      for (const value of [...sensitive, ...names])
        expect(file.text.toLowerCase(), `${value} in ${file.name}`).not.toContain(
          value.toLowerCase(),
        );
    }
    const runId = runIdOf(result.stdout);
    const forgot = run(["forget", runId, "--dir", join(dir, "runs")]);
    expect(forgot.status, forgot.stderr).toBe(0);
    expect(forgot.stdout).toMatch(
      new RegExp(`forgot ${runId}: its key is deleted; \\d+ value\\(s\\) in 1 run\\(s\\)`),
    );
  });
});
