#!/usr/bin/env node
// Follows the import graph of each package entry that must run on every runtime (Node, Bun,
// Deno, Cloudflare Workers) through the built `dist` files and the dependencies they import,
// and fails when it reaches a `node:` module (or a bare Node built-in) other than
// `node:async_hooks` (AsyncLocalStorage: Bun and Deno have it, Workers under the `nodejs_als`
// or `nodejs_compat` flag). Static imports, re-exports and dynamic imports of a string are
// followed; a Node-only subpath (`./node`) is allowed only off these graphs.
// `node scripts/edge-entries.mjs` prints the path to each offending import and exits 1;
// `pnpm lint:packages` runs it after the build.
import { existsSync, readFileSync, realpathSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** The entries that must import no `node:` module: package and export subpath. */
export const edgeEntries = [
  ["@loopguard/core", "."],
  ["@loopguard/core", "./plugin"],
  ["@loopguard/policy", "."],
  ["@loopguard/injection", "."],
  ["@loopguard/redact", "."],
  ["@loopguard/ai-sdk", "."],
  ["@loopguard/cloudflare", "."],
];
const allowed = new Set(["node:async_hooks"]);
const conditions = ["import", "default", "module"];
const builtins = new Set(builtinModules.filter((name) => !name.startsWith("_")));

/** The target of an `exports` value under our conditions (no "node": what a Worker bundler sees). */
function target(value) {
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.map(target).find(Boolean);
  if (value && typeof value === "object")
    for (const [key, next] of Object.entries(value))
      if (conditions.includes(key) || key === "workerd" || key === "worker") {
        const found = target(next);
        if (found) return found;
      }
  return undefined;
}

/** Resolves a bare specifier from `fromDir` through node_modules and the package's exports. */
function resolveBare(specifier, fromDir) {
  const parts = specifier.split("/");
  const name = specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
  const subpath = `.${specifier.slice(name.length)}`;
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const packageDir = join(dir, "node_modules", name);
    if (existsSync(join(packageDir, "package.json"))) {
      const manifest = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8"));
      let file;
      if (manifest.exports !== undefined) {
        const exportsMap =
          typeof manifest.exports === "string" || !Object.keys(manifest.exports)[0]?.startsWith(".")
            ? { ".": manifest.exports }
            : manifest.exports;
        let entry = exportsMap[subpath];
        if (entry === undefined) {
          // Pattern exports ("./*": "./dist/*.js").
          for (const [key, value] of Object.entries(exportsMap)) {
            if (!key.includes("*")) continue;
            const [head, tail] = key.split("*");
            if (subpath.startsWith(head) && subpath.endsWith(tail)) {
              const star = subpath.slice(head.length, subpath.length - tail.length);
              entry = JSON.parse(JSON.stringify(value).replaceAll("*", star));
              break;
            }
          }
        }
        file = target(entry);
      } else if (subpath === ".") {
        file = manifest.module ?? manifest.main ?? "index.js";
      } else file = subpath;
      if (file === undefined) return { error: `${specifier}: not exported under ${conditions}` };
      return { file: withExtension(join(packageDir, file)) };
    }
    if (dir === dirname(dir)) return { error: `${specifier}: not found from ${fromDir}` };
  }
}

function withExtension(path) {
  for (const candidate of [path, `${path}.js`, `${path}.mjs`, join(path, "index.js")])
    if (existsSync(candidate) && statSync(candidate).isFile()) return realpathSync(candidate);
  return path;
}

/** Every module specifier a JavaScript file imports at run time. */
function specifiersOf(text) {
  const found = [];
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:\\])\/\/.*$/gm, "$1");
  const patterns = [
    /(?:^|[;\n}])\s*import\s*(?:[\w*${}\s,]+from\s*)?["']([^"']+)["']/g,
    /(?:^|[;\n}])\s*export\s*(?:\*|\{[^}]*\})\s*(?:as\s+\w+\s+)?from\s*["']([^"']+)["']/g,
    /\bimport\(\s*["']([^"']+)["']\s*\)/g,
  ];
  // CommonJS files only: in an ES module a require( is text, e.g. a command in an error message.
  if (!/(?:^|\n)\s*(?:import|export)\s/.test(code))
    patterns.push(/\brequire\(\s*["']([^"']+)["']\s*\)/g);
  for (const pattern of patterns) for (const match of code.matchAll(pattern)) found.push(match[1]);
  return found;
}

/** Walks one entry's graph; returns the offending chains. */
export function checkEntry(packageName, subpath) {
  // The workspace package itself, as its own node_modules would hold it.
  const packageDir = join(root, "packages", packageName.split("/")[1]);
  const manifest = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8"));
  const entry = target(manifest.exports?.[subpath]);
  const start = entry
    ? { file: join(packageDir, entry) }
    : { error: `no export ${subpath} under ${conditions}` };
  if (!start.error && !existsSync(start.file)) start.error = `${start.file} is missing`;
  const peers = Object.keys(manifest.peerDependencies ?? {}).filter(
    (name) => !name.startsWith("@loopguard/"),
  );
  const isForeignPeer = (specifier) =>
    peers.some((name) => specifier === name || specifier.startsWith(`${name}/`));
  if (start.error)
    return [`${packageName} ${subpath}: cannot resolve (${start.error}; build it first)`];
  const problems = new Set();
  const parent = new Map([[start.file, undefined]]);
  const queue = [start.file];
  const chain = (file) => {
    const path = [];
    for (let at = file; at !== undefined; at = parent.get(at)) path.unshift(relative(root, at));
    return path.join(" -> ");
  };
  while (queue.length > 0) {
    const file = queue.shift();
    if (!/\.(c|m)?js$/.test(file)) continue;
    for (const specifier of specifiersOf(readFileSync(file, "utf8"))) {
      const bare = specifier.startsWith("node:") ? specifier : `node:${specifier}`;
      if (specifier.startsWith("node:") || builtins.has(specifier.split("/")[0])) {
        if (!allowed.has(bare)) problems.add(`${chain(file)} imports ${specifier}`);
        continue;
      }
      // A peer dependency other than ours (the AI SDK's `ai`) is the app's own choice of build.
      if (!specifier.startsWith(".") && file.startsWith(packageDir) && isForeignPeer(specifier))
        continue;
      const next = specifier.startsWith(".")
        ? { file: withExtension(resolve(dirname(file), specifier)) }
        : resolveBare(specifier, dirname(file));
      if (next.error) {
        problems.add(`${chain(file)}: ${next.error}`);
        continue;
      }
      if (!parent.has(next.file)) {
        parent.set(next.file, file);
        queue.push(next.file);
      }
    }
  }
  return [...problems];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  let failed = false;
  for (const [packageName, subpath] of edgeEntries) {
    const problems = checkEntry(packageName, subpath);
    if (problems.length === 0) continue;
    failed = true;
    for (const problem of problems)
      console.error(`[edge-entries] ${packageName} ${subpath}: ${problem}`);
  }
  if (failed) {
    console.error(
      "[edge-entries] these entries must run on Workers: move what needs a Node built-in behind a ./node subpath, or use a Web API (crypto.getRandomValues, TextEncoder, @noble/hashes)",
    );
    process.exit(1);
  }
  console.log(
    `[edge-entries] ${edgeEntries.length} entries import no node: module but node:async_hooks`,
  );
}
