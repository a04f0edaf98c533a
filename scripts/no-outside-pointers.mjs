#!/usr/bin/env node
// Comments and docs point at paths in this repository or at a decision record
// (docs/decisions/), never at an issue tracker or a file no clone has. Fails on "issue 27",
// "issues 14 and 22", "(#12)" and DESIGN.md in tracked source, scripts and docs; run by
// `pnpm lint:packages`. Changesets are history and may name what they close.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const pattern = /\bissues? #?\d+\b|\(#\d+\)|\bDESIGN\.md\b/gi;
const files = execFileSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8" })
  .split("\0")
  .filter((file) => /\.(ts|tsx|mjs|js|md|json|yaml|yml|sh)$/.test(file))
  .filter((file) => !file.startsWith(".changeset/") && !file.endsWith("pnpm-lock.yaml"))
  .filter((file) => file !== "scripts/no-outside-pointers.mjs");
const found = [];
for (const file of files) {
  let text;
  try {
    text = readFileSync(join(root, file), "utf8");
  } catch {
    continue;
  }
  const lines = text.split("\n");
  for (const [index, line] of lines.entries())
    for (const match of line.matchAll(pattern)) found.push(`${file}:${index + 1}: ${match[0]}`);
}
for (const item of found) console.error(`[outside-pointers] ${item}`);
if (found.length > 0) {
  console.error(
    `[outside-pointers] ${found.length} pointer(s) out of the repository: name the path or the decision record (docs/decisions/) instead`,
  );
  process.exit(1);
}
console.log(`[outside-pointers] none in ${files.length} files`);
