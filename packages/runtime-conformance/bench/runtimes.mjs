#!/usr/bin/env node
// `pnpm --filter @loopguard/runtime-conformance bench` (after `pnpm build`): side by side, in one
// run,
//   1. CPU per agent step on Node, Bun and Deno (bench/step-workload.mjs: a guarded support-desk
//      run with the policy gate, defaultScanner(), the taint gate, the vault and an in-memory
//      store), each runtime run ROUNDS times interleaved, the median taken; goal: Bun and Deno
//      within 1.5x of Node;
//   2. the size of a Worker bundle (esbuild, minified, workerd conditions) with core, policy,
//      injection and redact, gzipped (level 9); goal: at most 1 MB with the detector's weights.
// Exits 1 when a goal is missed, naming it.
import { spawnSync } from "node:child_process";
import { existsSync, realpathSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const packageDir = resolve(here, "..");
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const bin = (name) => {
  const link = join(packageDir, "node_modules/.bin", name);
  return existsSync(link) ? realpathSync(link) : undefined;
};
const runtimes = [
  { name: "node", command: process.execPath, args: [] },
  { name: "bun", command: bin("bun"), args: [] },
  { name: "deno", command: bin("deno"), args: ["run", "--allow-read", "--allow-env"] },
];

const samples = new Map(runtimes.map((runtime) => [runtime.name, []]));
const versions = new Map();
for (let round = 0; round < rounds; round++) {
  for (const runtime of runtimes) {
    if (!runtime.command) continue;
    const result = spawnSync(runtime.command, [...runtime.args, join(here, "step-workload.mjs")], {
      cwd: packageDir,
      encoding: "utf8",
      env: { ...process.env, NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1" },
    });
    const line = result.stdout?.split("\n").find((text) => text.startsWith("LOOPGUARD_BENCH "));
    if (!line) {
      console.error(
        `[bench] ${runtime.name} printed no figure (exit ${result.status}):\n${result.stdout}\n${result.stderr}`,
      );
      process.exit(1);
    }
    const figure = JSON.parse(line.slice("LOOPGUARD_BENCH ".length));
    versions.set(runtime.name, figure.runtime);
    samples.get(runtime.name).push(figure);
  }
}
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};
const problems = [];
console.log(
  `[bench] CPU per agent step (user+system, process.cpuUsage), median of ${rounds} interleaved rounds of ${samples.get("node")[0]?.runs} runs x ${samples.get("node")[0]?.steps / samples.get("node")[0]?.runs} steps; load ${(await import("node:os")).loadavg()[0].toFixed(1)}`,
);
console.log("runtime            cpu us/step   wall us/step   cpu vs node   goal");
const nodeCpu = median(samples.get("node").map((figure) => figure.cpuMicrosPerStep));
for (const runtime of runtimes) {
  const figures = samples.get(runtime.name);
  if (figures.length === 0) {
    console.log(`${runtime.name.padEnd(18)} (binary missing: not measured)`);
    problems.push(`${runtime.name}: not measured (its binary is missing from node_modules/.bin)`);
    continue;
  }
  const cpu = median(figures.map((figure) => figure.cpuMicrosPerStep));
  const wall = median(figures.map((figure) => figure.wallMicrosPerStep));
  const ratio = cpu / nodeCpu;
  const goal = runtime.name === "node" ? "-" : ratio <= 1.5 ? "within 1.5x" : "OVER 1.5x";
  if (runtime.name !== "node" && ratio > 1.5)
    problems.push(`${runtime.name}: ${ratio.toFixed(2)}x Node's CPU per step (goal 1.5x)`);
  console.log(
    `${versions.get(runtime.name).padEnd(18)} ${cpu.toFixed(0).padStart(11)}   ${wall.toFixed(0).padStart(12)}   ${ratio.toFixed(2).padStart(10)}x   ${goal}`,
  );
}

// 2. The Worker bundle.
const bundles = {
  "what the example Worker uses (createAgent, policy, defaultScanner, taintGate, vault, redact)": `
    import { createAgent, tool } from "@loopguard/core";
    import { defaultScanner, quarantine, taintGate } from "@loopguard/injection";
    import { allow, ask, argGt, policy } from "@loopguard/policy";
    import { createVault, redact } from "@loopguard/redact";
    export default { fetch() { return new Response(String([createAgent, tool, defaultScanner, quarantine, taintGate, allow, ask, argGt, policy, createVault, redact].length)); } };`,
  "every export of the four roots (upper bound)": `
    import * as core from "@loopguard/core";
    import * as injection from "@loopguard/injection";
    import * as policy from "@loopguard/policy";
    import * as redact from "@loopguard/redact";
    export default { fetch() { return new Response(String(Object.keys({ ...core, ...injection, ...policy, ...redact }).length)); } };`,
};
console.log(
  "\n[bench] Worker bundle (esbuild 0.21.5, minified, conditions workerd/worker, gzip -9)",
);
for (const [label, contents] of Object.entries(bundles)) {
  const result = await build({
    stdin: { contents, resolveDir: packageDir, loader: "js" },
    bundle: true,
    format: "esm",
    platform: "browser",
    conditions: ["workerd", "worker"],
    external: ["node:*"],
    minify: true,
    write: false,
    metafile: true,
    logLevel: "silent",
  });
  const code = result.outputFiles[0].contents;
  const gzipped = gzipSync(code, { level: 9 }).length;
  const weights = Object.entries(result.metafile.inputs).find(([path]) =>
    path.includes("detector-weights-data"),
  );
  const nodeImports = Object.values(result.metafile.outputs)[0].imports.map((item) => item.path);
  console.log(
    `  ${label}: ${(code.length / 1024).toFixed(0)} KiB raw, ${(gzipped / 1024).toFixed(0)} KiB gzipped (weights module ${weights ? `${(weights[1].bytes / 1024).toFixed(0)} KiB raw` : "absent"}; node: imports ${nodeImports.length === 0 ? "none" : nodeImports.join(", ")}) ${gzipped <= 1024 * 1024 ? "within 1 MB" : "OVER 1 MB"}`,
  );
  if (!weights) problems.push(`${label}: the detector's weights are not in the bundle`);
  if (gzipped > 1024 * 1024) problems.push(`${label}: ${gzipped} bytes gzipped (goal 1 MB)`);
}
if (problems.length > 0) {
  for (const problem of problems) console.error(`[bench] goal missed: ${problem}`);
  process.exit(1);
}
console.log("\n[bench] every goal met");
