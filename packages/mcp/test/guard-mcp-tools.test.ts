import { createAgent, withRun } from "@loopguard/core";
import { scriptedModel } from "@loopguard/core/testing";
import { allow, argGt, deny, policy, runGuard } from "@loopguard/policy";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { guardMcpTools, McpGuardError } from "../src/index.js";
import { compileInputSchema } from "../src/internal/index.js";
import { shopServer } from "./helpers.js";

let client: Client;
beforeAll(async () => {
  client = new Client({ name: "test", version: "1.0.0" });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [shopServer] }));
});
afterAll(async () => {
  await client.close();
});

describe("guardMcpTools", () => {
  it("refuses by default a server whose tool schema cannot be compiled, naming the tool", async () => {
    const error = await guardMcpTools(client).catch((caught: unknown) => caught);
    expect(McpGuardError.isInstance(error)).toBe(true);
    expect(String(error)).toMatch(
      /\[mcp\] tool "broken_schema" from MCP server "shop": its inputSchema cannot be compiled \(can't resolve reference #\/definitions\/missing/,
    );
  });

  it("guards each tool with the server's schema: validation, gates and the call go through the pipeline", async () => {
    const skipped: string[] = [];
    const tools = await guardMcpTools(client, {
      gates: [policy([deny("issue_refund", { when: argGt("amount", 500) }), allow("*")])],
      onInvalidSchema: "skip",
      onError: (_error, where) => skipped.push(where),
    });
    expect(skipped).toEqual(["tool broken_schema"]);
    const refund = tools.find((tool) => tool.tool.name === "issue_refund")!;
    expect(refund.tool.spec.input_schema).toMatchObject({ required: ["order_id", "amount"] });
    await withRun({ agentId: "a" }, async () => {
      const ok = await refund({ order_id: "A1", amount: 20 }, { toolUseId: "tu_1" });
      expect(ok).toMatchObject({ type: "ok", value: "refunded 20 on A1" });
      expect(refund.takeResult("tu_1")).toMatchObject({ structuredContent: { ok: true } });
      const denied = await refund({ order_id: "A1", amount: 900 }, { toolUseId: "tu_2" });
      expect(denied).toMatchObject({ type: "refused", reason: "policy_deny" });
      const invalid = await refund({ order_id: "A1", amount: "x" } as never, { toolUseId: "tu_3" });
      expect(invalid.type).toBe("refused");
      expect(invalid.type === "refused" && invalid.decision.refusedAt).toMatch(/^1:/);
    });
  });

  it("outside any withRun, opens one run per tool set: its tools share it, so the RunGuard sees the history", async () => {
    const tools = await guardMcpTools(client, {
      gates: [runGuard()],
      onInvalidSchema: "skip",
      run: { agentId: "outside" },
    });
    const lookup = tools.find((tool) => tool.tool.name === "lookup_order")!;
    const outcomes = [];
    for (let index = 0; index < 5; index += 1)
      outcomes.push(await lookup({ order_id: "A1" }, { toolUseId: `tu_out_${index}` }));
    expect(outcomes.slice(0, 4).every((outcome) => outcome.type === "ok")).toBe(true);
    expect(outcomes[4]).toMatchObject({ type: "refused", reason: "loop_detected" });
    // Inside a withRun, calls join that run instead (a fresh history).
    await withRun({ agentId: "inside" }, async (run) => {
      expect(await lookup({ order_id: "A1" }, { toolUseId: "tu_in" })).toMatchObject({
        type: "ok",
      });
      expect(run.calls.map((call) => call.toolUseId)).toEqual(["tu_in"]);
    });
  });

  it("hands loopguard's own loop the server's tools", async () => {
    const tools = await guardMcpTools(client, { onInvalidSchema: "skip" });
    const agent = createAgent({
      model: scriptedModel([
        {
          content: [
            { type: "tool_use", id: "tu_1", name: "lookup_order", input: { order_id: "A7" } },
          ],
          stop_reason: "tool_use",
        },
        { content: [{ type: "text", text: "It was delivered." }] },
      ]),
      tools: tools.map((guarded) => guarded.tool),
    });
    const result = await agent.run("Where is A7?");
    expect(result.status).toBe("completed");
    expect(result.answer).toBe("It was delivered.");
  });

  it("rejects what is not a client, and an options.tools name the server does not list", async () => {
    await expect(guardMcpTools({} as never)).rejects.toThrow(
      /\[mcp\] guardMcpTools\(client\): client must be a connected MCP Client/,
    );
    await expect(
      guardMcpTools(client, { tools: { nope: {} }, onInvalidSchema: "skip" }),
    ).rejects.toThrow(/options.tools names "nope", which MCP server "shop" does not list/);
  });
});

describe("compileInputSchema", () => {
  it("accepts exactly the arguments the schema allows (property: agrees with a direct check)", () => {
    const validate = compileInputSchema(
      {
        type: "object",
        properties: { id: { type: "string", minLength: 1 }, n: { type: "integer", minimum: 0 } },
        required: ["id"],
        additionalProperties: false,
      },
      "t",
      "s",
    );
    fc.assert(
      fc.property(
        fc.dictionary(
          fc.constantFrom("id", "n", "x"),
          fc.oneof(fc.string(), fc.integer(), fc.boolean()),
        ),
        (args) => {
          const expected =
            typeof args.id === "string" &&
            args.id.length > 0 &&
            (args.n === undefined || (Number.isInteger(args.n) && (args.n as number) >= 0)) &&
            !("x" in args);
          const result = validate(args);
          expect(result.ok).toBe(expected);
          if (!result.ok) expect(result.issues.length).toBeGreaterThan(0);
        },
      ),
    );
  });

  it("says which tool and server when a schema is not an object schema or does not compile", () => {
    expect(() => compileInputSchema(undefined, "t", 'MCP server "s"')).toThrow(
      /\[mcp\] tool "t" from MCP server "s" has no inputSchema object/,
    );
    expect(() => compileInputSchema({ type: "string" }, "t", "s")).toThrow(
      /inputSchema.type is "string"/,
    );
    expect(() =>
      compileInputSchema({ type: "object", properties: { a: { type: 12 } } }, "t", "s"),
    ).toThrow(/its inputSchema cannot be compiled/);
    const draft2020 = compileInputSchema(
      {
        $schema: "https://json-schema.org/draft/2020-12/schema",
        type: "object",
        $defs: { text: { type: "string" } },
        properties: { a: { $ref: "#/$defs/text" } },
      },
      "t",
      "s",
    );
    expect(draft2020({ a: 1 })).toEqual({ ok: false, issues: ["a: must be string"] });
  });
});
