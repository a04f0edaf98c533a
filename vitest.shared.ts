import { resolve } from "node:path";
import { defineConfig } from "vitest/config";

const root = import.meta.dirname;

/**
 * The vitest config every package uses: tests run against the TypeScript sources of the
 * workspace packages (no build needed), and each run writes a JSON report that `.ci/run`
 * adds up into its `N passed, N failed` line.
 */
export function packageConfig(
  dir: string,
  overrides: { testTimeout?: number; include?: string[] } = {},
) {
  return defineConfig({
    resolve: {
      alias: [
        {
          find: /^@loopguard\/([a-z-]+)\/([a-z-]+)$/,
          replacement: resolve(root, "packages/$1/src/$2/index.ts"),
        },
        {
          find: /^@loopguard\/([a-z-]+)$/,
          replacement: resolve(root, "packages/$1/src/index.ts"),
        },
      ],
    },
    test: {
      root: dir,
      include: overrides.include ?? ["src/**/*.test.ts", "test/**/*.test.ts"],
      // Deadlines, not speed bounds: only a test that hangs reaches them, so they sit far above
      // any machine's pace (a 2-core machine at load 15 runs some tests ten times slower).
      testTimeout: overrides.testTimeout ?? 120_000,
      hookTimeout: 300_000,
      reporters: ["default", "json"],
      outputFile: { json: resolve(dir, "reports/vitest.json") },
      // An unhandled rejection anywhere fails the run (vitest's default, stated on purpose).
      dangerouslyIgnoreUnhandledErrors: false,
      passWithNoTests: true,
    },
  });
}
