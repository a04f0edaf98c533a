/**
 * Compiles core and the parts of checkpoint a child process needs into a temporary
 * `node_modules` layout, so crash tests can run real node processes on compiled JS without
 * touching any package's `dist` (other builds may be running in this working tree).
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const packages = resolve(import.meta.dirname, "../../..");
const repository = resolve(packages, "..");

/** Builds into a fresh temporary directory and returns it: `<root>/checkpoint/*.js` imports `@loopguard/core`. */
export function buildForChild(): string {
  const root = mkdtempSync(join(tmpdir(), "lg-child-build-"));
  const tsc = join(repository, "node_modules/.bin/tsc");
  const core = join(root, "node_modules/@loopguard/core");
  mkdirSync(core, { recursive: true });
  copyFileSync(join(packages, "core/package.json"), join(core, "package.json"));
  // Another engineer's core file may not typecheck mid-edit: emit anyway (exit code ignored),
  // and let the child fail loudly if something it needs is missing.
  run(tsc, ["-p", join(packages, "core/tsconfig.build.json"), "--outDir", join(core, "dist")]);
  // Every runtime dependency core declares (read from its package.json, so a new one is never missed).
  const coreManifest = JSON.parse(readFileSync(join(packages, "core/package.json"), "utf8")) as {
    dependencies?: Record<string, string>;
  };
  for (const name of Object.keys(coreManifest.dependencies ?? {}).filter((name) => !name.startsWith("@loopguard/"))) {
    mkdirSync(join(root, "node_modules", name, ".."), { recursive: true });
    symlinkSync(realpathSync(join(packages, "core/node_modules", name)), join(root, "node_modules", name));
  }
  // The SQLite driver, for children that use the SQLite store.
  symlinkSync(
    realpathSync(join(packages, "checkpoint/node_modules/better-sqlite3")),
    join(root, "node_modules/better-sqlite3"),
  );
  const source = join(packages, "checkpoint/src");
  const config = join(root, "tsconfig.checkpoint.json");
  writeFileSync(
    config,
    JSON.stringify({
      extends: join(packages, "checkpoint/tsconfig.build.json"),
      compilerOptions: {
        rootDir: source,
        outDir: join(root, "checkpoint"),
        noEmit: false,
        declaration: false,
        declarationMap: false,
        typeRoots: [join(repository, "node_modules/@types")],
        paths: { "@loopguard/core": [join(core, "dist/index.d.ts")], "@loopguard/core/testing": [join(core, "dist/testing/index.d.ts")] },
      },
      files: [
        join(source, "jsonl-event-store.ts"),
        join(source, "sqlite-event-store.ts"),
        join(source, "__fixtures__/support-desk.ts"),
        join(source, "__fixtures__/delegation-desk.ts"),
        join(source, "__fixtures__/budget-tree.ts"),
      ],
      include: [],
      exclude: [],
    }),
  );
  run(tsc, ["-p", config]);
  return root;
}

function run(command: string, args: string[]): void {
  try {
    execFileSync(command, args, { stdio: "pipe" });
  } catch {
    // tsc exits non-zero on type errors but still emits; a missing file fails the child.
  }
}
