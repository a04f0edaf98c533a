import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { postgresEventStore } from "@loopguard/checkpoint";
import { createAgent, tool } from "@loopguard/core";
import { scriptedModel } from "@loopguard/core/testing";
import { allow, policy } from "@loopguard/policy";
import * as v from "valibot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../src/cli.js";

// `loopguard replay --database-url` over runs recorded in PostgreSQL (a schema of its own).
const url = process.env.DATABASE_URL;
const schema = `replay_cli_${process.pid}`;

const sendEmail = tool({
  name: "send_email",
  description: "Send an email.",
  input: v.object({ to: v.string(), body: v.string() }),
  run: async () => "sent",
});

describe.skipIf(!url)("loopguard replay --database-url", () => {
  let root: string;
  let candidate: string;
  const store = url ? postgresEventStore({ connectionString: url, schema }) : undefined;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "loopguard-replay-pg-"));
    for (const to of ["ann@acme-shop.com", "x@evil.example", "y@evil.example"]) {
      await createAgent({
        model: scriptedModel((_request, call) =>
          call === 1
            ? {
                content: [
                  {
                    type: "tool_use",
                    id: "toolu_1",
                    name: "send_email",
                    input: { to, body: "hi" },
                  },
                ],
              }
            : { content: [{ type: "text", text: "done" }], stop_reason: "end_turn" },
        ),
        tools: [sendEmail],
        store: store!,
        gates: [policy([allow("*")])],
      }).run(`Email ${to}`);
    }
    candidate = join(root, "candidate.json");
    await writeFile(
      candidate,
      JSON.stringify({
        version: 1,
        default: "allow",
        rules: [
          {
            effect: "deny",
            tool: "send_email",
            when: { arg: "to", domainNotIn: ["acme-shop.com"] },
          },
        ],
      }),
    );
  }, 300_000);

  afterAll(async () => {
    if (store) {
      const pool = await store.pool();
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await store.close?.();
    }
    await rm(root, { recursive: true, force: true });
  });

  it("re-judges the runs in the database and prints the counts", async () => {
    const lines: string[] = [];
    const code = await main(
      ["replay", "--policy", candidate, "--database-url", url!, "--schema", schema],
      (line) => lines.push(line),
    );
    expect(code).toBe(0);
    expect(lines.at(-1)).toBe(
      "3 calls re-judged: 2 allowed → denied, 0 denied → allowed, 0 → ask, 1 unchanged",
    );
  });

  it("an unreachable database names the URL", async () => {
    await expect(
      main(
        ["replay", "--policy", candidate, "--database-url", "postgres://nobody@127.0.0.1:1/none"],
        () => {},
      ),
    ).rejects.toThrow(
      /could not connect to PostgreSQL at postgres:\/\/nobody@127\.0\.0\.1:1\/none/,
    );
  });
});
