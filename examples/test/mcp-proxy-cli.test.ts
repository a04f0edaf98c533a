import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { foldRun } from "@loopguard/core/plugin";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { describe, expect, it } from "vitest";
import { notesServer } from "../mcp/guarded-notes.js";

// The CLI as a host starts it: `loopguard mcp-proxy --policy policy.json --store DIR -- node notes-server.mjs`,
// over real stdio. It runs from the built CLI (turbo builds it before this package's tests).
const cli = join(
  createRequire(import.meta.url).resolve("loopguard/package.json"),
  "..",
  "dist",
  "cli.js",
);
const policyFile = join(import.meta.dirname, "..", "mcp", "policy.json");

describe("loopguard mcp-proxy (the CLI, over stdio)", () => {
  it("lists the server's tools, refuses by policy with an MCP tool error, and logs its run in --store", async () => {
    if (!existsSync(cli))
      throw new Error(
        `the CLI is not built (${cli}); run: pnpm --filter loopguard build (turbo does it before this package's tests)`,
      );
    const dir = mkdtempSync(join(tmpdir(), "loopguard-mcp-cli-"));
    const host = new Client({ name: "host", version: "1.0.0" });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        cli,
        "mcp-proxy",
        "--policy",
        policyFile,
        "--store",
        dir,
        "--run-id",
        "run_cli",
        "--",
        process.execPath,
        notesServer,
      ],
      stderr: "pipe",
    });
    const stderr: string[] = [];
    transport.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk.toString()));
    try {
      await host.connect(transport);
      expect((await host.listTools()).tools.map((tool) => tool.name)).toEqual([
        "read_note",
        "send_email",
      ]);
      const ok = await host.callTool({
        name: "send_email",
        arguments: { to: "team@acme-shop.com", body: "hi" },
      });
      expect(ok.content).toEqual([expect.objectContaining({ type: "text" })]);
      expect(JSON.stringify(ok.content)).toContain("sent to team@acme-shop.com");
      const refused = await host.callTool({
        name: "send_email",
        arguments: { to: "leak@evil.example", body: "x" },
      });
      expect(refused.isError).toBe(true);
      expect(JSON.stringify(refused.content)).toContain("Refused by loopguard (");
    } finally {
      await host.close();
    }
    // The proxy ends its run (stopped, host_disconnected) when the host hangs up; give it a
    // moment to write run-end.
    const { jsonlEventStore } = await import("@loopguard/checkpoint");
    const store = jsonlEventStore({ dir });
    let status = "";
    for (let attempt = 0; attempt < 50 && status !== "stopped"; attempt += 1) {
      const events = await store.read("run_cli");
      if (events.length > 0) status = foldRun(events).status;
      if (status !== "stopped") await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toBe("stopped");
    const events = await store.read("run_cli");
    expect(events.at(-1)).toMatchObject({ type: "run-end", why: "host_disconnected" });
    const types = events.map((event) => event.type);
    expect(types).toEqual([
      "run-start",
      "tool-call-intent",
      "tool-call-result",
      "tool-call-refusal",
      "run-end",
    ]);
    expect(stderr.join("")).toMatch(/\[mcp-proxy\] refused send_email: /);
    await store.close?.();
    rmSync(dir, { recursive: true, force: true });
  }, 600_000);
});
