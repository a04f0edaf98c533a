import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

// scripts/edge-entries.mjs is what `pnpm lint:packages` runs; here it runs on the builds the
// test task depends on, and on an entry known to reach node:http, so the check can fail.
const script = resolve(import.meta.dirname, "../../../scripts/edge-entries.mjs");
const { checkEntry, edgeEntries } = (await import(script)) as {
  checkEntry(packageName: string, subpath: string): string[];
  edgeEntries: Array<[string, string]>;
};

describe("entries that must run on every runtime", () => {
  it.each(edgeEntries)("%s %s reaches no node: module but node:async_hooks", (name, subpath) => {
    expect(checkEntry(name, subpath)).toEqual([]);
  });

  it("the check finds a node: import where there is one (core's testing entry and its HTTP server)", () => {
    expect(checkEntry("@loopguard/core", "./testing")).toContainEqual(
      expect.stringMatching(/messages-api-server\.js imports node:http$/),
    );
  });
});
