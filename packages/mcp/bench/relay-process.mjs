// The floor of any proxy that reads what passes: a relay that parses each JSON-RPC line from
// the server and writes it again (JSON.parse + JSON.stringify), with no checks at all.
// `node relay-process.mjs -- <command> [args...]`.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

const [separator, command, ...args] = process.argv.slice(2);
if (separator !== "--" || !command) {
  process.stderr.write("usage: node relay-process.mjs -- <command> [args...]\n");
  process.exit(2);
}
const child = spawn(command, args, { stdio: ["pipe", "pipe", "ignore"] });
const forward = (from, to) =>
  createInterface({ input: from, crlfDelay: Number.POSITIVE_INFINITY }).on("line", (line) => {
    if (line.trim() !== "") to.write(`${JSON.stringify(JSON.parse(line))}\n`);
  });
forward(process.stdin, child.stdin);
forward(child.stdout, process.stdout);
process.stdin.on("end", () => child.kill());
child.on("exit", (code) => process.exit(code ?? 0));
