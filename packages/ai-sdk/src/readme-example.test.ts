import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..");

describe("the README's quick start", () => {
  it("is the fixture file, unchanged, with no casts", () => {
    const readme = readFileSync(join(root, "README.md"), "utf8");
    const fixture = readFileSync(join(root, "src/__fixtures__/readme-example.ts"), "utf8");
    const quickStart = readme.slice(readme.indexOf("## Quick start"));
    const block = /```ts\n([\s\S]*?)```/.exec(quickStart)?.[1];
    expect(block?.trim()).toBe(fixture.trim());
    const code = fixture.replace(/\/\/.*$/gm, "");
    expect(code).not.toMatch(/\bas\s+(?!const\b)[A-Za-z{[(]/);
    expect(fixture).not.toMatch(/@ts-(ignore|expect-error|nocheck)/);
  });

  it("type-checks under strict (the package's tsconfig includes the fixture)", () => {
    const tsc = createRequire(join(root, "package.json")).resolve("typescript/package.json");
    const bin = join(tsc, "..", "bin", "tsc");
    const result = spawnSync(process.execPath, [bin, "-p", join(root, "tsconfig.json")], {
      encoding: "utf8",
      timeout: 600_000,
    });
    expect(result.stdout + result.stderr).toBe("");
    expect(result.status).toBe(0);
  });
});
