import { postgresEventStore, postgresLimitStore } from "@loopguard/checkpoint";
import { createAgent, tool } from "@loopguard/core";
import { memoryEventStore, scriptedModel } from "@loopguard/core/testing";
import { rateLimit, tenantBudget } from "@loopguard/policy";
import * as v from "valibot";
import { afterAll, describe, expect, it } from "vitest";
import { main } from "../src/cli.js";

// `loopguard limits` over a PostgreSQL limit store that real runs used (a schema of its own).
const url = process.env.DATABASE_URL;
const schema = `limits_cli_${process.pid}`;

describe.skipIf(!url)("loopguard limits", () => {
  afterAll(async () => {
    const store = postgresEventStore({ connectionString: url!, schema, max: 1 });
    const pool = await store.pool();
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await store.close();
  });

  it("shows the rate-limit buckets and each tenant's spend and runs today", async () => {
    const store = postgresLimitStore({ connectionString: url!, schema, max: 2 });
    const budget = tenantBudget({ store, perDay: { maxUsd: 5, maxRuns: 10 } });
    const agent = createAgent({
      model: scriptedModel([{ content: "hello" }], { model: "claude-sonnet-5-5" }),
      tools: [],
      budgets: [budget],
    });
    const result = await agent.run("hi", { context: { attributes: { tenant: "acme" } } });
    expect(result.status).toBe("completed");
    await store.take("rate:send_email", { capacity: 5, refillPerSecond: 1 }, { now: Date.now() });
    await store.close();

    const lines: string[] = [];
    const code = await main(
      ["limits", "--connection", url!, "--schema", schema, "--no-color"],
      (line) => lines.push(line),
    );
    const text = lines.join("\n");
    expect(code).toBe(0);
    expect(text).toMatch(
      /rate-limit buckets \(1\)\n {2}rate:send_email {2}4\.\d\d\/5 tokens, \+1\/s/,
    );
    expect(text).toMatch(
      new RegExp(
        `acme {2}day from \\S+ {2}\\$${result.costUsd.toFixed(4).replace(".", "\\.")} spent \\+ \\$0\\.0000 held of \\$5\\.0000 .*1/10 runs`,
      ),
    );

    const json: string[] = [];
    await main(
      ["limits", "--connection", url!, "--schema", schema, "--tenant", "acme", "--json"],
      (line) => json.push(line),
    );
    const view = JSON.parse(json.join("\n")) as {
      counters: Array<{ key: string; settled: number }>;
    };
    expect(view.counters.map((counter) => counter.key).sort()).toEqual([
      "tenant:acme:runs",
      "tenant:acme:usd",
    ]);
  });

  it("PostgreSQL unreachable: limits fail closed with a reason the model can read, and the run is not lost", async () => {
    const down = postgresLimitStore({
      connectionString: "postgres://postgres@127.0.0.1:1/nowhere",
      schema,
      timeoutMs: 500,
    });
    const up = postgresLimitStore({ connectionString: url!, schema, max: 2 });
    const sendEmail = tool({
      name: "send_email",
      description: "Send an email.",
      input: v.object({ to: v.string() }),
      run: async () => "sent",
    });
    const store = memoryEventStore();
    const model = () =>
      scriptedModel(
        [
          {
            content: [
              {
                type: "tool_use",
                id: "toolu_1",
                name: "send_email",
                input: { to: "a@acme-shop.com" },
              },
            ],
          },
          { content: "done" },
        ],
        { model: "claude-sonnet-5-5" },
      );
    const agentOn = (limits: typeof up, budgetStore: typeof up) =>
      createAgent({
        model: model(),
        tools: [sendEmail],
        store,
        gates: [
          rateLimit({ tool: "send_email", capacity: 2, refillPerSecond: 1 }, { store: limits }),
        ],
        budgets: [tenantBudget({ store: budgetStore, perDay: { maxUsd: 5 } })],
      });
    // The tenant budget cannot be checked: no model step, the run pauses with the reason.
    const paused = await agentOn(up, down).run("email a", {
      context: { attributes: { tenant: "acme" } },
    });
    expect(paused).toMatchObject({ status: "running", why: "run_budget_unavailable", steps: 0 });
    expect(paused.error).toMatch(
      /\[checkpoint\] postgresLimitStore\.(?:reserve|batch)\("tenant:acme:usd"\): cannot reach PostgreSQL at 127\.0\.0\.1:1\/nowhere/,
    );
    // The rate limit cannot be checked: the call is refused with a reason the model reads.
    const resumed = await agentOn(down, up).resume(paused.runId);
    expect(resumed.status).toBe("completed");
    expect(resumed.blocked).toHaveLength(1);
    expect(resumed.blocked[0]).toMatchObject({
      tool: "send_email",
      reason: "rate_limit_unavailable",
    });
    expect(resumed.blocked[0]!.message).toMatch(/rate limit/i);
    await down.close();
    await up.close();
  });

  it("an unreachable database names the URL", async () => {
    await expect(
      main(
        ["limits", "--connection", "postgres://postgres@127.0.0.1:1/nowhere", "--no-color"],
        () => undefined,
      ),
    ).rejects.toThrow(/127\.0\.0\.1:1/);
  });
});
