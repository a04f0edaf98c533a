/**
 * `loopguard verify` on keyed logs, through the built CLI: with the key, a
 * log cut short with its summary deleted is BROKEN (exit 1); without the key, a keyed log,
 * genuine or re-chained with plain SHA-256, is "keyed log: key needed" (exit 2), never intact.
 */

import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jsonlEventStore } from "@loopguard/checkpoint";
import { retryLog } from "@loopguard/core/testing";
import { describe, expect, it } from "vitest";
import { built, run } from "./cli-helpers.js";

const key = "a-test-log-key-of-32-characters!";
const runId = "run_verify";

async function keyedLog(): Promise<{ dir: string; file: string }> {
  const dir = mkdtempSync(join(tmpdir(), "lg-verify-"));
  const store = jsonlEventStore({ dir, logKey: key });
  await store.append(runId, retryLog(runId, 6, { task: "refund A1001" }), { expectedSeq: 0 });
  await store.close();
  return { dir, file: store.fileOf(runId) };
}

describe.skipIf(!built)("loopguard verify on keyed logs", { timeout: 600_000 }, () => {
  it("with the key: intact when whole, BROKEN when cut short with its summary deleted", async () => {
    const whole = await keyedLog();
    const intact = run(["verify", runId, "--dir", whole.dir], { LOOPGUARD_LOG_KEY: key });
    expect(intact.status, intact.stdout + intact.stderr).toBe(0);
    expect(intact.stdout).toMatch(/intact, 6 events; every HMAC checked/);
    const { dir, file } = await keyedLog();
    const lines = readFileSync(file, "utf8").split("\n").slice(0, -1);
    writeFileSync(file, `${lines.slice(0, 4).join("\n")}\n`);
    unlinkSync(join(dir, `${runId}.summary.json`));
    const cut = run(["verify", runId, "--dir", dir], { LOOPGUARD_LOG_KEY: key });
    expect(cut.status).toBe(1);
    expect(cut.stdout).toMatch(
      /BROKEN at event 4: the log does not end in a run-end and its summary is missing/,
    );
  });

  it("without the key: keyed log: key needed, for the genuine log and for one re-chained with SHA-256", async () => {
    const genuine = await keyedLog();
    const plain = run(["verify", runId, "--dir", genuine.dir], { LOOPGUARD_LOG_KEY: "" });
    expect(plain.status).toBe(2);
    expect(plain.stdout).toMatch(/keyed log: key needed/);
    expect(plain.stdout).not.toMatch(/intact/);
    const { dir, file } = await keyedLog();
    let previous = `loopguard:${runId}`;
    const lines = readFileSync(file, "utf8")
      .split("\n")
      .slice(0, -1)
      .map((line) => {
        const text = `${line.slice(0, line.lastIndexOf(',"chain":"'))}}`;
        previous = `sha256:${createHash("sha256").update(`${previous}\n`).update(text).digest("hex")}`;
        return `${text.slice(0, -1)},"chain":"${previous}"}`;
      });
    writeFileSync(file, `${lines.join("\n")}\n`);
    unlinkSync(join(dir, `${runId}.summary.json`));
    const rechained = run(["verify", runId, "--dir", dir], { LOOPGUARD_LOG_KEY: "" });
    expect(rechained.status).toBe(2);
    expect(rechained.stdout).toMatch(/keyed log: key needed/);
    expect(rechained.stdout).not.toMatch(/intact/);
  });
});
