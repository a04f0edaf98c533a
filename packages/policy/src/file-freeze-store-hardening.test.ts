import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { fileFreezeStore } from "./file-freeze-store.js";

// A freeze file that is not a regular file (a FIFO an attacker or a mistake put there, a
// directory, a device) must never hang or mislead the runs: status() rejects at once (the kill
// switch then refuses, fail closed), and what the store writes is private.
const dir = mkdtempSync(join(tmpdir(), "loopguard-freeze-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("fileFreezeStore against files that are not files", () => {
  it("refuses a FIFO at once instead of hanging every run", async () => {
    const path = join(dir, "fifo.json");
    execFileSync("mkfifo", [path]);
    const store = fileFreezeStore({ path, cacheMs: 0 });
    // A FIFO with no writer blocks an open() forever: reaching the rejection at all (before
    // the test's timeout) is the proof that nothing opened it.
    await expect(store.status()).rejects.toThrow(/not a regular file/);
  });

  it("refuses a directory and an oversized file, naming the path", async () => {
    const directory = join(dir, "as-dir.json");
    mkdirSync(directory);
    await expect(fileFreezeStore({ path: directory, cacheMs: 0 }).status()).rejects.toThrow(
      /not a regular file/,
    );
    const big = join(dir, "big.json");
    writeFileSync(big, `{"version":1,"frozen":false,"reason":"${"x".repeat(70_000)}"}`);
    await expect(fileFreezeStore({ path: big, cacheMs: 0 }).status()).rejects.toThrow(
      /bytes; a freeze file is a small JSON object/,
    );
  });

  it("writes the freeze file 0600 in a 0700 directory", async () => {
    const path = join(dir, "private", "freeze.json");
    const store = fileFreezeStore({ path, cacheMs: 0 });
    await store.freeze({ reason: "incident", by: "ana" });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, "private")).mode & 0o777).toBe(0o700);
    expect(await store.status()).toMatchObject({ frozen: true, reason: "incident", by: "ana" });
  });
});
