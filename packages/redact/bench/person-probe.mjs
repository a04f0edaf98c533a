// What the person detector calls a name in text written by others that has no PII labels: the
// dev subsets of the public injection corpus (AgentDojo's tool outputs: emails, hotel and
// restaurant listings, calendars, full of real-looking names and of firms named like people),
// read only when LOOPGUARD_CORPUS (a file or a folder holding injection.jsonl) names it. Prints
// every distinct PERSON finding with its rule, score and count, so a reviewer can count the
// wrong ones; this is the dev material the precision guard (business, brand and function
// words, capitalised articles under a cue) was tuned on. Asserts nothing.
//
//   pnpm --filter @loopguard/redact build
//   LOOPGUARD_CORPUS=../shared/data node bench/person-probe.mjs
import { existsSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { redact } from "../dist/index.js";

const named = process.env.LOOPGUARD_CORPUS;
if (named === undefined || named === "") {
  console.log(
    "(LOOPGUARD_CORPUS is not set: name the injection corpus, a file or a folder holding injection.jsonl, to run this probe.)",
  );
  process.exit(0);
}
let path = resolve(named);
if (existsSync(path) && statSync(path).isDirectory()) path = join(path, "injection.jsonl");
if (!existsSync(path)) {
  console.error(
    `[redact] bench/person-probe.mjs: no injection corpus at ${path}; set LOOPGUARD_CORPUS to pii data's folder or its injection.jsonl.`,
  );
  process.exit(1);
}
// The dev subsets of the injection corpus (its README); the test subsets are not read here.
const DEV = new Set([
  "agentdojo_injected_tool_output",
  "agentdojo_clean_tool_output",
  "garak_latent_injection",
  "garak_clean_context",
  "llm_guard_unit_tests",
  "notinject_hard_negative",
  "pint_example",
]);
const rows = readFileSync(path, "utf8")
  .split("\n")
  .filter((line) => line.trim() !== "")
  .map((line) => JSON.parse(line))
  .filter((row) => DEV.has(row.subset));
const counts = new Map();
let characters = 0;
for (const row of rows) {
  characters += row.text.length;
  for (const finding of redact(row.text).findings) {
    if (finding.type !== "PERSON") continue;
    const key = `${row.text.slice(finding.start, finding.end).replace(/\n/g, "\\n")} [${finding.rule} ${finding.score.toFixed(2)}]`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
}
const total = [...counts.values()].reduce((sum, count) => sum + count, 0);
console.log(
  `${rows.length} dev rows, ${(characters / 1000).toFixed(0)} KB: ${total} PERSON findings, ${counts.size} distinct\n`,
);
for (const [key, count] of [...counts].sort((left, right) => right[1] - left[1]))
  console.log(`${String(count).padStart(4)}  ${key}`);
