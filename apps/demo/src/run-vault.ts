import {
  chmodSync,
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  truncateSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { isValidRunId } from "@loopguard/checkpoint";
import { type SupportVault, supportVault, type VaultEntry } from "@loopguard/evals";
import { UsageError } from "./usage-error.js";

/** Where a run's vault file lives: `<vault dir>/<runId>.jsonl`. */
export function vaultFileOf(vaultDir: string, runId: string): string {
  if (!isValidRunId(runId))
    throw new UsageError(
      `run id ${JSON.stringify(String(runId).slice(0, 60))} is invalid: use letters, digits, "_", ".", ":" or "-"`,
    );
  return join(vaultDir, `${runId}.jsonl`);
}

/**
 * The PII vault of one run, kept outside the event log in a file only its owner can read
 * (directory 0700, file 0600): one JSON line per tokenised value, appended and fsynced before
 * the token can reach the model or the log, so a run that crashes and resumes in a new
 * process reveals every token it wrote. A torn last line (a crash mid-write) is dropped: its
 * token was never handed out. Delete the file with the run to forget the customer's data.
 */
export function runVault(vaultDir: string, runId: string): SupportVault {
  const file = vaultFileOf(vaultDir, runId);
  mkdirSync(vaultDir, { recursive: true, mode: 0o700 });
  const entries: VaultEntry[] = [];
  if (existsSync(file)) {
    const text = readFileSync(file, "utf8");
    // A torn last line (a crash mid-write) is cut off, so the next entry starts on its own line.
    if (text !== "" && !text.endsWith("\n"))
      truncateSync(file, Buffer.byteLength(text.slice(0, text.lastIndexOf("\n") + 1)));
    const lines = text.split("\n");
    for (const [index, line] of lines.entries()) {
      if (line.trim() === "") continue;
      try {
        entries.push(JSON.parse(line) as VaultEntry);
      } catch (error) {
        if (index === lines.length - 1) break; // torn tail: never handed out
        throw new UsageError(
          `the vault file ${file} is damaged at line ${index + 1} (${(error as Error).message}); its run cannot reveal its tokens`,
        );
      }
    }
  }
  return supportVault({
    entries,
    onEntry: (entry) => {
      const fd = openSync(file, "a", 0o600);
      try {
        writeSync(fd, `${JSON.stringify(entry)}\n`);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      chmodSync(file, 0o600);
    },
  });
}
