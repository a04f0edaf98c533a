import { currentRun, tool as loopguardTool, withRun } from "@loopguard/core";
import { allow, argGt, ask, deny, policy, runGuard } from "@loopguard/policy";
import {
  convertToModelMessages,
  generateText,
  jsonSchema,
  type ModelMessage,
  stepCountIs,
  streamText,
  type ToolSet,
  tool,
  type UIMessage,
} from "ai";
import { convertArrayToReadableStream, MockLanguageModelV3 } from "ai/test";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { GuardToolsError, guardTools, isToolRefusal } from "./index.js";

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};
const stop = { unified: "stop" as const, raw: "end_turn" };
const toolCalls = { unified: "tool-calls" as const, raw: "tool_use" };

/** A model that calls `toolName` with `input` on its first turn, then answers "done". */
function callingModel(calls: { toolName: string; input: unknown; id?: string }[]) {
  let turn = 0;
  return new MockLanguageModelV3({
    doGenerate: async () => {
      turn += 1;
      if (turn === 1)
        return {
          content: calls.map((call, index) => ({
            type: "tool-call" as const,
            toolCallId: call.id ?? `call_${index + 1}`,
            toolName: call.toolName,
            input: JSON.stringify(call.input),
          })),
          finishReason: toolCalls,
          usage,
          warnings: [],
        };
      return {
        content: [{ type: "text" as const, text: "done" }],
        finishReason: stop,
        usage,
        warnings: [],
      };
    },
  });
}

/** The tool-result parts the model received on its second call. */
function toolResultsSent(model: MockLanguageModelV3, callIndex = 1) {
  const prompt = model.doGenerateCalls[callIndex]?.prompt ?? [];
  return prompt.flatMap((message) =>
    message.role === "tool" ? message.content.filter((part) => part.type === "tool-result") : [],
  );
}

function supportTools(log: string[]) {
  return {
    issue_refund: tool({
      description: "Refund an order.",
      inputSchema: z.object({ order_id: z.string(), amount: z.number() }),
      execute: async ({ order_id, amount }, { toolCallId }) => {
        log.push(`refund ${order_id} ${amount} ${toolCallId}`);
        return { refunded: amount };
      },
    }),
    lookup_order: tool({
      description: "Look up an order.",
      inputSchema: z.object({ order_id: z.string() }),
      execute: async ({ order_id }) => ({ order_id, status: "delivered" }),
    }),
  };
}

describe("guardTools with generateText", () => {
  it("keeps each tool's JSON schema and runs an allowed call, with toolCallId as the tool-use id", async () => {
    const log: string[] = [];
    const model = callingModel([
      { toolName: "issue_refund", input: { order_id: "A1", amount: 20 }, id: "tc_9" },
    ]);
    const result = await withRun({ agentId: "support" }, async (run) => {
      const out = await generateText({
        model,
        tools: guardTools(supportTools(log), { gates: [policy([allow("*")]), runGuard()] }),
        prompt: "refund A1",
        stopWhen: stepCountIs(3),
      });
      expect(run.calls.map((call) => call.toolUseId)).toEqual(["tc_9"]);
      return out;
    });
    expect(result.text).toBe("done");
    expect(log).toEqual(["refund A1 20 tc_9"]);
    const sent = model.doGenerateCalls[0]!.tools!.find((item) => item.name === "issue_refund");
    expect(sent).toMatchObject({
      type: "function",
      inputSchema: {
        type: "object",
        properties: { order_id: { type: "string" }, amount: { type: "number" } },
      },
    });
    expect(
      Object.keys((sent as { inputSchema: { properties: object } }).inputSchema.properties),
    ).toEqual(["order_id", "amount"]);
    expect(toolResultsSent(model)[0]!.output).toEqual({ type: "json", value: { refunded: 20 } });
  });

  it("hands a refusal back to the model as an error result with the reason and fix hints, without running the tool", async () => {
    const log: string[] = [];
    const model = callingModel([
      { toolName: "issue_refund", input: { order_id: "A1", amount: 900 } },
    ]);
    const result = await withRun({ agentId: "support" }, () =>
      generateText({
        model,
        tools: guardTools(supportTools(log), {
          gates: [
            policy([
              deny("issue_refund", { when: argGt("amount", 500), reason: "refund_too_large" }),
              allow("*"),
            ]),
          ],
        }),
        prompt: "refund A1",
        stopWhen: stepCountIs(3),
      }),
    );
    expect(log).toEqual([]);
    const output = toolResultsSent(model)[0]!.output as { type: string; value: string };
    expect(output.type).toBe("error-text");
    expect(output.value).toContain("refund_too_large");
    expect(output.value).toContain("What to do instead");
    const refusal = result.steps[0]!.toolResults[0]!.output;
    expect(isToolRefusal(refusal)).toBe(true);
  });

  it("guards loopguard tools: the spec's schema goes to the model and the pipeline validates strictly", async () => {
    const keys: string[] = [];
    const refund = loopguardTool({
      name: "issue_refund",
      description: "Refund an order.",
      input: v.object({ order_id: v.string(), amount: v.number() }),
      run: async (_args, context) => {
        keys.push(context.idempotencyKey);
        return "refunded";
      },
    });
    const model = callingModel([
      { toolName: "issue_refund", input: { order_id: "A1", amount: 5 }, id: "tc_1" },
      { toolName: "issue_refund", input: { order_id: "A2", amount: "lots", extra: 1 }, id: "tc_2" },
    ]);
    await withRun({ agentId: "support", runId: "run_fixed" }, () =>
      generateText({
        model,
        tools: guardTools([refund]),
        prompt: "refund",
        stopWhen: stepCountIs(3),
      }),
    );
    expect(keys).toEqual(["run_fixed:tc_1"]);
    expect(model.doGenerateCalls[0]!.tools![0]).toMatchObject({
      inputSchema: {
        type: "object",
        properties: { order_id: { type: "string" } },
        additionalProperties: false,
      },
    });
    const [ok, refused] = toolResultsSent(model);
    expect(ok!.output).toEqual({ type: "text", value: "refunded" });
    expect(refused!.output.type).toBe("error-text");
    expect((refused!.output as { value: string }).value).toMatch(/validation|invalid|unknown key/i);
  });

  it("outside any withRun opens one run per tool set, so loop detection still sees the history", async () => {
    const log: string[] = [];
    const guarded = guardTools(supportTools(log), { gates: [runGuard()] });
    const reasons: string[] = [];
    for (let index = 0; index < 5; index += 1) {
      const model = callingModel([{ toolName: "lookup_order", input: { order_id: "A1" } }]);
      const result = await generateText({
        model,
        tools: guarded,
        prompt: "where is A1",
        stopWhen: stepCountIs(3),
      });
      const output = result.steps[0]!.toolResults[0]!.output;
      reasons.push(isToolRefusal(output) ? output.reason : "ok");
    }
    expect(reasons).toEqual(["ok", "ok", "ok", "ok", "loop_detected"]);
    expect(currentRun()).toBeUndefined();
  });

  it("maps an ask onto the AI SDK's approval flow: the call waits for an approved tool-approval-response", async () => {
    const log: string[] = [];
    const gates = [policy([ask("issue_refund", { when: argGt("amount", 100) }), allow("*")])];
    const tools = guardTools(supportTools(log), { gates, approval: "ai-sdk" });
    const model = callingModel([
      { toolName: "issue_refund", input: { order_id: "A1", amount: 300 }, id: "tc_big" },
    ]);
    await withRun({ agentId: "support" }, async () => {
      const first = await generateText({
        model,
        tools,
        prompt: "refund A1",
        stopWhen: stepCountIs(3),
      });
      const request = first.content.find((part) => part.type === "tool-approval-request");
      expect(request).toBeDefined();
      expect(log).toEqual([]);
      const messages: ModelMessage[] = [
        { role: "user", content: "refund A1" },
        ...first.response.messages,
        {
          role: "tool",
          content: [
            { type: "tool-approval-response", approvalId: request!.approvalId, approved: true },
          ],
        },
      ];
      await generateText({ model, tools, messages, stopWhen: stepCountIs(3) });
    });
    expect(log).toEqual(["refund A1 300 tc_big"]);
  });

  it("works with the approval parts of UI messages (chat apps): approval-responded runs the call once", async () => {
    const log: string[] = [];
    const gates = [policy([ask("issue_refund", { when: argGt("amount", 100) }), allow("*")])];
    const tools = guardTools(supportTools(log), { gates, approval: "ai-sdk" });
    const model = callingModel([
      { toolName: "issue_refund", input: { order_id: "A7", amount: 250 }, id: "tc_ui" },
    ]);
    await withRun({ agentId: "support" }, async () => {
      const first = await generateText({
        model,
        tools,
        prompt: "refund A7",
        stopWhen: stepCountIs(3),
      });
      const request = first.content.find((part) => part.type === "tool-approval-request")!;
      // What a chat UI holds after the user clicks "approve" on the tool part.
      const ui: Omit<UIMessage, "id">[] = [
        { role: "user", parts: [{ type: "text", text: "refund A7" }] },
        {
          role: "assistant",
          parts: [
            {
              type: "tool-issue_refund",
              toolCallId: "tc_ui",
              state: "approval-responded",
              input: { order_id: "A7", amount: 250 },
              approval: { id: request.approvalId, approved: true },
            },
          ],
        },
      ];
      const messages = await convertToModelMessages(ui, { tools });
      await generateText({ model, tools, messages, stopWhen: stepCountIs(3) });
    });
    expect(log).toEqual(["refund A7 250 tc_ui"]);
  });

  it("does not ask about a call the policy allows, and a denied approval never runs the tool", async () => {
    const log: string[] = [];
    const gates = [policy([ask("issue_refund", { when: argGt("amount", 100) }), allow("*")])];
    const tools = guardTools(supportTools(log), { gates, approval: "ai-sdk" });
    const small = callingModel([
      { toolName: "issue_refund", input: { order_id: "A1", amount: 30 } },
    ]);
    const big = callingModel([
      { toolName: "issue_refund", input: { order_id: "A2", amount: 300 } },
    ]);
    await withRun({ agentId: "support" }, async () => {
      const first = await generateText({
        model: small,
        tools,
        prompt: "refund",
        stopWhen: stepCountIs(3),
      });
      expect(first.content.some((part) => part.type === "tool-approval-request")).toBe(false);
      const second = await generateText({
        model: big,
        tools,
        prompt: "refund",
        stopWhen: stepCountIs(3),
      });
      const request = second.content.find((part) => part.type === "tool-approval-request")!;
      await generateText({
        model: big,
        tools,
        messages: [
          { role: "user", content: "refund" },
          ...second.response.messages,
          {
            role: "tool",
            content: [
              { type: "tool-approval-response", approvalId: request.approvalId, approved: false },
            ],
          },
        ],
        stopWhen: stepCountIs(3),
      });
    });
    expect(log).toEqual([expect.stringMatching(/^refund A1 30 /)]);
  });

  it("answers an ask with loopguard's approver when the AI SDK flow is not used", async () => {
    const log: string[] = [];
    const asked: string[] = [];
    const gates = [policy([ask("issue_refund"), allow("*")])];
    const model = callingModel([
      { toolName: "issue_refund", input: { order_id: "A1", amount: 300 } },
    ]);
    const result = await withRun({ agentId: "support" }, () =>
      generateText({
        model,
        tools: guardTools(supportTools(log), {
          gates,
          approver: (request) => {
            asked.push(`${request.tool} ${JSON.stringify(request.args)}`);
            return "deny";
          },
        }),
        prompt: "refund",
        stopWhen: stepCountIs(3),
      }),
    );
    expect(asked).toEqual(['issue_refund {"order_id":"A1","amount":300}']);
    expect(log).toEqual([]);
    expect(isToolRefusal(result.steps[0]!.toolResults[0]!.output)).toBe(true);
  });

  it("turns a tool that throws into the AI SDK's tool error, and the loop goes on", async () => {
    const tools = {
      flaky: tool({
        description: "Fails.",
        inputSchema: z.object({}),
        execute: async (): Promise<string> => {
          throw new Error("upstream 503");
        },
      }),
    };
    const model = callingModel([{ toolName: "flaky", input: {} }]);
    const result = await withRun({ agentId: "a" }, () =>
      generateText({ model, tools: guardTools(tools), prompt: "go", stopWhen: stepCountIs(3) }),
    );
    expect(result.text).toBe("done");
    const error = result.steps[0]!.content.find((part) => part.type === "tool-error");
    expect(String((error as { error: unknown }).error)).toMatch(
      /\[ai-sdk\] tool "flaky" failed \(exception\)/,
    );
  });
});

describe("guardTools with streamText", () => {
  it("runs allowed calls and refuses denied ones while streaming", async () => {
    const log: string[] = [];
    let turn = 0;
    const model = new MockLanguageModelV3({
      doStream: async () => {
        turn += 1;
        const parts =
          turn === 1
            ? [
                {
                  type: "tool-call" as const,
                  toolCallId: "s1",
                  toolName: "lookup_order",
                  input: '{"order_id":"A1"}',
                },
                {
                  type: "tool-call" as const,
                  toolCallId: "s2",
                  toolName: "issue_refund",
                  input: '{"order_id":"A1","amount":5}',
                },
                { type: "finish" as const, finishReason: toolCalls, usage },
              ]
            : [
                { type: "text-start" as const, id: "t" },
                { type: "text-delta" as const, id: "t", delta: "ok" },
                { type: "text-end" as const, id: "t" },
                { type: "finish" as const, finishReason: stop, usage },
              ];
        return { stream: convertArrayToReadableStream<(typeof parts)[number]>(parts) };
      },
    });
    const text = await withRun({ agentId: "s" }, async () => {
      const stream = streamText({
        model,
        tools: guardTools(supportTools(log), {
          gates: [policy([allow("lookup_*")], { default: "deny" })],
        }),
        prompt: "go",
        stopWhen: stepCountIs(3),
      });
      return stream.text;
    });
    expect(text).toBe("ok");
    expect(log).toEqual([]);
    const sent = model.doStreamCalls[1]!.prompt.flatMap((message) =>
      message.role === "tool" ? message.content : [],
    ) as { toolCallId: string; output: { type: string } }[];
    expect(sent.map((part) => [part.toolCallId, part.output.type])).toEqual([
      ["s1", "json"],
      ["s2", "error-text"],
    ]);
  });
});

describe("guardTools bad input", () => {
  it("refuses a tool set it cannot guard, with a message that says what to do", () => {
    const noSchema = { broken: { description: "x", execute: async () => 1 } } as unknown as ToolSet;
    expect(() => guardTools(noSchema)).toThrow(
      /\[ai-sdk\] guardTools: tools.broken has no inputSchema/,
    );
    // A tool with no execute is also a type error; the cast checks the runtime message.
    const noExecute = {
      ui: tool({ description: "x", inputSchema: z.object({}) }),
    } as unknown as ToolSet;
    expect(() => guardTools(noExecute)).toThrow(/tools.ui has no execute function/);
    const provider = {
      search: {
        type: "provider",
        id: "anthropic.web_search",
        args: {},
        inputSchema: jsonSchema({}),
      },
    } as unknown as ToolSet;
    expect(() => guardTools(provider)).toThrow(/provider-executed tool/);
    expect(() => guardTools(supportTools([]), { tools: { nope: { sensitive: true } } })).toThrow(
      /options.tools names "nope"/,
    );
    expect(() => guardTools([{ name: "x" }] as never)).toThrow(
      /tools\[0\] is not a loopguard tool/,
    );
    expect(() => guardTools(supportTools([]), { approval: "maybe" as never })).toThrow(
      GuardToolsError,
    );
    expect(() => guardTools(supportTools([]), { run: { store: {} } as never })).toThrow(
      /options.run says who is running .*not store; to log the run, call generateText inside withRun/,
    );
  });

  it("an unknown tool name from the model never reaches a guarded tool", async () => {
    const log: string[] = [];
    const model = callingModel([{ toolName: "drop_database", input: {} }]);
    const result = await withRun({ agentId: "a" }, () =>
      generateText({
        model,
        tools: guardTools(supportTools(log)),
        prompt: "go",
        stopWhen: stepCountIs(3),
      }),
    );
    expect(log).toEqual([]);
    expect(result.steps[0]!.content.some((part) => part.type === "tool-error")).toBe(true);
  });
});
