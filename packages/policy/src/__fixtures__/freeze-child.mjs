// A separate process that freezes the fleet by writing the version 1 freeze file directly
// (the format fileFreezeStore reads), atomically: a temporary file, then a rename.
// Usage: node freeze-child.mjs <path> <reason> <by> [unfreeze]
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";

const [path, reason, by, mode] = process.argv.slice(2);
if (!path || !reason || !by) {
  process.stderr.write("usage: node freeze-child.mjs <path> <reason> <by> [unfreeze]\n");
  process.exit(2);
}
const content = mode === "unfreeze" ? { version: 1, frozen: false, by, at: new Date().toISOString() } : { version: 1, frozen: true, reason, by, at: new Date().toISOString() };
mkdirSync(dirname(path), { recursive: true });
const temporary = `${path}.${process.pid}.tmp`;
writeFileSync(temporary, `${JSON.stringify(content, null, 2)}\n`);
renameSync(temporary, path);
process.stdout.write(`frozen by process ${process.pid}\n`);
