// Summarises a V8 CPU profile (`node --cpu-prof`): self time grouped by package or file, the
// few functions that take most of it. `node profile.mjs <dir-or-file.cpuprofile> [top]`.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

/**
 * Self time by where the code lives, heaviest first: `functions` ([{ where, percent }]) and
 * `packages` (regular expressions count for the package whose code ran them).
 */
export function summarizeProfile(path, top = 12) {
  const file = statSync(path).isDirectory()
    ? join(
        path,
        readdirSync(path).find((name) => name.endsWith(".cpuprofile")),
      )
    : path;
  const profile = JSON.parse(readFileSync(file, "utf8"));
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const parents = new Map();
  for (const node of profile.nodes)
    for (const child of node.children ?? []) parents.set(child, node.id);
  const self = new Map();
  const byPackage = new Map();
  let total = 0;
  for (let index = 0; index < profile.samples.length; index += 1) {
    const delta = profile.timeDeltas[index] ?? 0;
    const id = profile.samples[index];
    const frame = nodes.get(id).callFrame;
    if (frame.functionName === "(idle)") continue;
    total += delta;
    const key = describe(frame);
    self.set(key, (self.get(key) ?? 0) + delta);
    let owner = id;
    while (
      nodes.get(owner).callFrame.url === "" &&
      frame.functionName.startsWith("RegExp: ") &&
      parents.has(owner)
    ) {
      owner = parents.get(owner);
      if (nodes.get(owner).callFrame.url !== "") break;
    }
    const where = packageOf(nodes.get(owner).callFrame);
    byPackage.set(where, (byPackage.get(where) ?? 0) + delta);
  }
  const rank = (map, limit) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, limit)
      .map(([where, time]) => ({ where, percent: +((100 * time) / total).toFixed(1) }));
  return {
    functions: rank(self, top),
    packages: rank(byPackage, 10),
    totalMs: Math.round(total / 1000),
  };
}

function packageOf(frame) {
  const url = frame.url ?? "";
  if (url === "")
    return frame.functionName === "(garbage collector)"
      ? "garbage collection"
      : "V8 and Node internals";
  const pkg = url.match(/packages\/([^/]+)\/dist\//);
  if (pkg) return `@loopguard/${pkg[1]}`;
  const dep = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\//g);
  if (dep) return dep.at(-1).replace(/^node_modules\/|\/$/g, "");
  if (url.startsWith("node:")) return "V8 and Node internals";
  return "the benchmark itself";
}

function describe(frame) {
  const url = frame.url ?? "";
  const name = frame.functionName || "(anonymous)";
  if (url === "") {
    if (name.startsWith("RegExp: "))
      return `regular expression /${name.slice(8, 70)}${name.length > 78 ? "…" : ""}/`;
    return name;
  }
  const pkg = url.match(/packages\/([^/]+)\/dist\/(.+)$/);
  if (pkg) return `@loopguard/${pkg[1]} ${pkg[2]} ${name}`;
  const dep = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\//g);
  if (dep) return `${dep.at(-1).replace(/^node_modules\/|\/$/g, "")} ${name}`;
  if (url.startsWith("node:")) return `node ${url.slice(5)} ${name}`;
  return `${url.split("/").slice(-1)[0]} ${name}`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const summary = summarizeProfile(process.argv[2], Number(process.argv[3] ?? 20));
  for (const row of summary.packages)
    console.log(`${String(row.percent).padStart(5)}%  ${row.where}`);
  console.log();
  for (const row of summary.functions)
    console.log(`${String(row.percent).padStart(5)}%  ${row.where}`);
}
