import { beforeAll, describe, expect, it } from "vitest";
import {
  bundleForWorkers,
  type ConformanceReport,
  fetchFromWorker,
  packageDir,
  reportOf,
  run,
  runtimeBinary,
} from "./launch.js";

// One scenario (src/scenario.mjs), the same assertions, four runtimes. Node runs first: its
// check names are what every other runtime must report, passed.
const slow = 600_000; // a deadline for a hung runtime, far above any machine's pace

let node: ConformanceReport;
beforeAll(async () => {
  node = reportOf(await run(process.execPath, ["src/run-node.mjs"]));
}, slow);

function expectConformant(report: ConformanceReport, runtime: string) {
  expect(report.runtime).toBe(runtime);
  const failures = report.checks.filter((check) => !check.ok);
  expect(failures, failures.map((check) => `${check.name}: ${check.error}`).join("\n")).toEqual([]);
  expect(report.checks.map((check) => check.name)).toEqual(node.checks.map((check) => check.name));
}

describe("the runtime conformance scenario", () => {
  it("passes every check on Node", () => {
    expectConformant(node, "node");
    expect(node.checks.length).toBeGreaterThanOrEqual(8);
  });

  const bun = runtimeBinary("bun");
  if (bun.missing) console.warn(`[runtime-conformance] skipping Bun: ${bun.missing}`);
  it.skipIf(!bun.path)(
    "passes every check on Bun",
    async () => {
      expectConformant(reportOf(await run(bun.path!, ["src/run-node.mjs"])), "bun");
    },
    slow,
  );

  const deno = runtimeBinary("deno");
  if (deno.missing) console.warn(`[runtime-conformance] skipping Deno: ${deno.missing}`);
  it.skipIf(!deno.path)(
    "passes every check on Deno 2",
    async () => {
      const version = await run(deno.path!, ["--version"]);
      expect(version.stdout).toMatch(/^deno 2\./);
      expectConformant(
        reportOf(await run(deno.path!, ["run", "--allow-read", "--allow-env", "src/run-node.mjs"])),
        "deno",
      );
    },
    slow,
  );

  it(
    "passes every check on workerd, bundled as a Worker with no node: import left",
    async () => {
      const bundle = await bundleForWorkers(`${packageDir}/src/worker.mjs`);
      expect(bundle.nodeImports.filter((path) => path !== "node:async_hooks")).toEqual([]);
      const response = await fetchFromWorker(bundle.code);
      expect(response.status, response.body).toBe(200);
      expectConformant(JSON.parse(response.body) as ConformanceReport, "workerd");
    },
    slow,
  );

  it.each([
    [
      "@loopguard/policy/node",
      /Uncaught Error: \[policy\] @loopguard\/policy\/node \(fileFreezeStore, loadPolicyFile\) needs node:fs.*"@loopguard\/policy"/,
    ],
    [
      "@loopguard/checkpoint",
      /Uncaught Error: \[checkpoint\] @loopguard\/checkpoint \(jsonlEventStore.*needs node:fs.*d1EventStore from @loopguard\/cloudflare/,
    ],
    [
      "@loopguard/redact/node",
      /Uncaught Error: \[redact\] @loopguard\/redact\/node \(fileKeyProvider, fileSubjectKeyStore\) needs node:fs.*"@loopguard\/redact"/,
    ],
  ])(
    "importing %s in a Worker fails at load with an error naming the root to use",
    async (subpath, message) => {
      const bundle = await bundleForWorkers({
        contents: `import * as nodeOnly from "${subpath}";\nexport default { fetch: () => new Response(String(Object.keys(nodeOnly))) };`,
      });
      expect(bundle.nodeImports).toEqual([]);
      const error = await fetchFromWorker(bundle.code).then(
        (response) => new Error(`the Worker loaded: ${response.status} ${response.body}`),
        (thrown: unknown) => thrown as Error,
      );
      expect(String((error as Error).message ?? error)).toMatch(message);
    },
    slow,
  );
});
