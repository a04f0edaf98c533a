import { spawn } from "node:child_process";
import { existsSync, realpathSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Readable } from "node:stream";
import { build } from "esbuild";
import { Miniflare } from "miniflare";

export const packageDir = resolve(import.meta.dirname, "..");

/** The report the scenario prints (`LOOPGUARD_CONFORMANCE {json}`). */
export interface ConformanceReport {
  runtime: string;
  passed: number;
  failed: number;
  checks: Array<{ name: string; ok: boolean; detail?: unknown; error?: string }>;
}

/**
 * The binary an npm package put in node_modules/.bin, or undefined with the reason when it is
 * not there (the package's platform build missing): the only case a runtime's test skips.
 */
export function runtimeBinary(name: "bun" | "deno"): { path?: string; missing?: string } {
  const link = join(packageDir, "node_modules", ".bin", name);
  if (!existsSync(link))
    return { missing: `${name}: node_modules/.bin/${name} is missing (run pnpm install)` };
  return { path: realpathSync(link) };
}

/** Runs a command to its end (no deadline of our own: the test's timeout is the bound). */
export function run(
  command: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string> } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(command, args, {
      cwd: options.cwd ?? packageDir,
      env: { ...process.env, NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1", ...options.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.on("error", fail);
    child.on("close", (code) => done({ code, stdout, stderr }));
  });
}

/** The report line of a run's output, or an error with everything the run printed. */
export function reportOf(output: {
  code: number | null;
  stdout: string;
  stderr: string;
}): ConformanceReport {
  const line = output.stdout.split("\n").find((text) => text.startsWith("LOOPGUARD_CONFORMANCE "));
  if (!line)
    throw new Error(
      `no report (exit ${output.code}):\nstdout:\n${output.stdout}\nstderr:\n${output.stderr}`,
    );
  return JSON.parse(line.slice("LOOPGUARD_CONFORMANCE ".length)) as ConformanceReport;
}

/** Bundles an entry for Workers the way wrangler does (workerd conditions, node: left external). */
export async function bundleForWorkers(entry: string | { contents: string }) {
  const result = await build({
    ...(typeof entry === "string"
      ? { entryPoints: [entry] }
      : { stdin: { contents: entry.contents, resolveDir: packageDir, loader: "js" as const } }),
    bundle: true,
    format: "esm",
    platform: "browser",
    conditions: ["workerd", "worker"],
    external: ["node:*"],
    write: false,
    metafile: true,
    minify: true,
    outfile: "worker.js",
    logLevel: "silent",
  });
  const output = Object.values(result.metafile.outputs)[0]!;
  return {
    code: result.outputFiles[0]!.text,
    nodeImports: output.imports
      .filter((item) => item.path.startsWith("node:"))
      .map((item) => item.path),
  };
}

/** Runs a bundled Worker in workerd (through miniflare) and returns the body of GET /. */
export async function fetchFromWorker(
  code: string,
  options: { compatibilityFlags?: string[]; path?: string; bindings?: Record<string, string> } = {},
): Promise<{ status: number; body: string }> {
  let log = "";
  const miniflare = new Miniflare({
    handleRuntimeStdio(stdout: Readable, stderr: Readable) {
      stdout.on("data", (chunk: Buffer) => {
        log += chunk;
      });
      stderr.on("data", (chunk: Buffer) => {
        log += chunk;
      });
    },
    modules: true,
    script: code,
    compatibilityDate: "2026-04-01",
    compatibilityFlags: options.compatibilityFlags ?? ["nodejs_compat"],
    bindings: options.bindings,
  });
  try {
    const response = await miniflare.dispatchFetch(`http://localhost${options.path ?? "/"}`);
    return { status: response.status, body: await response.text() };
  } catch (error) {
    // workerd prints why it did not start (an error thrown at import) on its own stderr.
    throw new Error(`${(error as Error).message}\nworkerd:\n${log}`, { cause: error });
  } finally {
    // dispose() rethrows a failed start, which the catch above has already reported.
    await miniflare.dispose().catch(() => undefined);
  }
}
