import { describe, expect, it } from "vitest";

describe("@loopguard/policy/node on a runtime without files", () => {
  it("resolves to a module that throws a [policy] error naming the root", async () => {
    await expect(import("./node/unsupported.js")).rejects.toThrow(
      /^\[policy\] @loopguard\/policy\/node .*needs node:fs.*Import from "@loopguard\/policy" instead/,
    );
  });
});
