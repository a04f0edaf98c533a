#!/usr/bin/env node
// Finds import circles between the source files of each package (type-only imports count: a
// circle of types is still two files that cannot be read, moved or split apart), and contract
// files that import an implementation. `node scripts/import-circles.mjs` prints each circle and
// exits 1 when there is one; `pnpm lint:packages` runs it.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** Every non-test TypeScript file under `dir`. */
function sources(dir) {
  const found = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (name !== "node_modules" && name !== "__fixtures__") found.push(...sources(path));
    } else if (/\.tsx?$/.test(name) && !/\.test(-d)?\.ts$|\.d\.ts$/.test(name)) found.push(path);
  }
  return found;
}

/** The files a source imports (relative specifiers only), resolved to source paths. */
function importsOf(file) {
  const text = readFileSync(file, "utf8");
  const targets = [];
  const pattern = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+["'](\.{1,2}\/[^"']+)["']/g;
  for (const match of text.matchAll(pattern)) {
    const specifier = match[1];
    const base = resolve(dirname(file), specifier.replace(/\.js$/, ""));
    const candidate = [`${base}.ts`, `${base}.tsx`, join(base, "index.ts")].find(existsSync);
    if (candidate) targets.push(candidate);
  }
  return targets;
}

/** Tarjan's strongly connected components: every component of more than one file is a circle. */
function circles(graph) {
  let index = 0;
  const stack = [];
  const onStack = new Set();
  const indices = new Map();
  const lowlinks = new Map();
  const found = [];
  const visit = (node) => {
    indices.set(node, index);
    lowlinks.set(node, index);
    index += 1;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!indices.has(next)) {
        visit(next);
        lowlinks.set(node, Math.min(lowlinks.get(node), lowlinks.get(next)));
      } else if (onStack.has(next)) {
        lowlinks.set(node, Math.min(lowlinks.get(node), indices.get(next)));
      }
    }
    if (lowlinks.get(node) === indices.get(node)) {
      const component = [];
      let member;
      do {
        member = stack.pop();
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(component);
    }
  };
  for (const node of graph.keys()) if (!indices.has(node)) visit(node);
  return found;
}

const roots = ["packages", "apps"]
  .flatMap((group) => readdirSync(join(root, group)).map((name) => join(root, group, name, "src")))
  .filter(existsSync);
const problems = [];
for (const src of roots) {
  const graph = new Map(sources(src).map((file) => [file, importsOf(file)]));
  for (const component of circles(graph))
    problems.push(
      `import circle: ${component
        .map((file) => relative(root, file))
        .sort()
        .join(" <-> ")}`,
    );
  for (const [file, targets] of graph) {
    if (!file.includes(`${join(src, "contracts")}/`)) continue;
    for (const target of targets)
      if (
        !target.includes(`${join(src, "contracts")}/`) &&
        !/\/(json|errors|events)\.ts$/.test(target)
      )
        problems.push(
          `contract imports an implementation: ${relative(root, file)} -> ${relative(root, target)}`,
        );
  }
}
for (const problem of problems) console.error(`[import-circles] ${problem}`);
if (problems.length > 0) {
  console.error(
    `[import-circles] ${problems.length} problem(s): move the shared types to a file both sides import (contracts import only contracts and plain data types)`,
  );
  process.exit(1);
}
console.log(`[import-circles] no import circle in ${roots.length} packages`);
