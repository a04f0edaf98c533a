import { describe, expect, it } from "vitest";
import * as node from "./node/index.js";

describe("@loopguard/redact/node", () => {
  it("holds exactly what reads files", () => {
    expect(Object.keys(node).sort()).toEqual(["fileKeyProvider", "fileSubjectKeyStore"]);
  });

  it("resolves to a module that throws a [redact] error naming the root on runtimes without files", async () => {
    await expect(import("./node/unsupported.js")).rejects.toThrow(
      /^\[redact\] @loopguard\/redact\/node .*needs node:fs.*Import from "@loopguard\/redact" instead/,
    );
  });
});
