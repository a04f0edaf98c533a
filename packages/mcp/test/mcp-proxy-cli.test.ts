import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { textOfResult } from "./helpers.js";

// The user's path from the docs: an MCP host (the official SDK client over stdio) starts
// `loopguard mcp-proxy` in front of @modelcontextprotocol/server-filesystem.
const cli = resolve(import.meta.dirname, "../../../apps/demo/dist/cli.js");
const require = createRequire(import.meta.url);
const filesystemServer = join(
  dirname(require.resolve("@modelcontextprotocol/server-filesystem/package.json")),
  "dist",
  "index.js",
);

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "loopguard-mcp-cli-"));
  await writeFile(join(root, "notes.txt"), "hello from the notes\n");
  await writeFile(
    join(root, "policy.json"),
    JSON.stringify({
      version: 1,
      default: "allow",
      rules: [{ effect: "ask", tool: "write_file" }],
    }),
  );
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe.skipIf(!existsSync(cli))(
  "loopguard mcp-proxy (the built CLI) in front of server-filesystem",
  () => {
    it("answers read_text_file with its structured content, parks a write, ends the run stopped when the host hangs up, and leaves no lock", async () => {
      const runs = join(root, "runs");
      const host = new Client({ name: "host", version: "1.0.0" });
      await host.connect(
        new StdioClientTransport({
          command: process.execPath,
          args: [
            cli,
            "mcp-proxy",
            "--policy",
            join(root, "policy.json"),
            "--store",
            runs,
            "--run-id",
            "run_cli_proxy",
            "--",
            process.execPath,
            filesystemServer,
            root,
          ],
          env: { ...(process.env as Record<string, string>), NO_COLOR: "1" },
          stderr: "ignore",
        }),
      );
      const read = await host.callTool({
        name: "read_text_file",
        arguments: { path: join(root, "notes.txt") },
      });
      expect(read.isError).toBeFalsy();
      expect(read.structuredContent).toEqual({ content: "hello from the notes\n" });
      const write = await host.callTool({
        name: "write_file",
        arguments: { path: join(root, "out.txt"), content: "x" },
      });
      expect(textOfResult(write)).toMatch(/^Refused by loopguard \(approval_pending\)/);
      // A person approves from another process: the summary fits this server (no demo box).
      const approved = spawnSync(
        process.execPath,
        [cli, "approve", "run_cli_proxy", "--dir", runs, "--as", "maria"],
        {
          encoding: "utf8",
          env: { ...process.env, NO_COLOR: "1" },
        },
      );
      expect(approved.stderr).toBe("");
      expect(approved.status).toBe(0);
      expect(approved.stdout).toMatch(/^run run_cli_proxy: running\n/);
      expect(approved.stdout).toMatch(/approval apr_\w+ \(write_file\): approve by maria/);
      expect(approved.stdout).not.toMatch(/refund|ledger/i);
      expect(approved.stdout.split("\n").every((line) => line.length <= 80)).toBe(true);
      const admitted = await host.callTool({
        name: "write_file",
        arguments: { path: join(root, "out.txt"), content: "x" },
      });
      expect(textOfResult(admitted)).toMatch(/Successfully wrote/);
      // A second ask is still open when the host hangs up.
      const second = await host.callTool({
        name: "write_file",
        arguments: { path: join(root, "out2.txt"), content: "y" },
      });
      expect(textOfResult(second)).toMatch(/approval_pending/);
      await host.close();
      // The CLI exits once the host is gone; the run's log then ends stopped.
      let files: string[] = [];
      for (let attempt = 0; attempt < 200; attempt += 1) {
        files = await readdir(runs);
        const status = spawnSync(process.execPath, [cli, "runs", "--dir", runs], {
          encoding: "utf8",
          env: { ...process.env, NO_COLOR: "1" },
        }).stdout;
        if (/run_cli_proxy\s+stopped/.test(status) && !files.some((file) => file.endsWith(".lock")))
          break;
        await new Promise((done) => setTimeout(done, 100));
      }
      expect(files.filter((file) => file.endsWith(".lock"))).toEqual([]);
      const approve = spawnSync(
        process.execPath,
        [cli, "approve", "run_cli_proxy", "--dir", runs],
        {
          encoding: "utf8",
          env: { ...process.env, NO_COLOR: "1" },
        },
      );
      expect(approve.status).toBe(2);
      expect(approve.stderr).toMatch(
        /run run_cli_proxy has ended \(stopped: host_disconnected\); its open approval requests were withdrawn/,
      );
      expect(approve.stdout).not.toMatch(/refund|email/i);
    }, 600_000);
  },
);
