import * as v from "valibot";
import { afterEach, describe, expect, it } from "vitest";
import { createAgent } from "./agent.js";
import { claudeModel } from "./anthropic/index.js";
import { childRunId } from "./child-run-id.js";
import {
  type MessagesApiServer,
  memoryEventStore,
  messagesApiServer,
  recordingExporter,
} from "./testing/index.js";
import { tool } from "./tool.js";

let server: MessagesApiServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

interface Body {
  tools?: Array<{ name: string }>;
  messages: Array<{ role: string; content: unknown }>;
}

/** The last message holds a tool result (the model has heard back from its tool). */
const heardBack = (body: Body) =>
  JSON.stringify(body.messages.at(-1)?.content).includes("tool_result");

describe("sub-agents against the Messages API (the real SDK, a loopback server)", () => {
  it("a parent delegates through asTool: two linked runs, one trace, the child's 429 retried, its spend charged to the parent", async () => {
    let childCalls = 0;
    server = await messagesApiServer({
      handler: (request) => {
        const body = request.body as Body;
        const names = (body.tools ?? []).map((item) => item.name);
        if (names.includes("research")) {
          if (heardBack(body)) return { content: "Order A1 shipped on Monday." };
          return {
            content: [
              {
                type: "tool_use",
                id: "toolu_01Parent",
                name: "research",
                input: { task: "When did order A1 ship?" },
              },
            ],
          };
        }
        childCalls += 1;
        // The child's first call is rate limited once: the SDK path retries it.
        if (childCalls === 1) return { type: "error", status: 429, retryAfterMs: 1 };
        if (heardBack(body)) return { content: "A1 shipped Monday." };
        return {
          content: [
            {
              type: "tool_use",
              id: "toolu_01Child",
              name: "lookup_order",
              input: { order_id: "A1" },
            },
          ],
        };
      },
    });
    const store = memoryEventStore();
    const exporter = recordingExporter();
    const looked: string[] = [];
    const lookup = tool({
      name: "lookup_order",
      description: "Looks an order up by id.",
      input: v.object({ order_id: v.pipe(v.string(), v.description("The order id")) }),
      trust: "trusted",
      run: (args, context) => {
        looked.push(context.idempotencyKey);
        return { order_id: args.order_id, shipped: "Monday" };
      },
    });
    const model = claudeModel({
      baseURL: server.url,
      apiKey: "sk-ant-test-fake",
      maxTokens: 1_024,
    });
    const researcher = createAgent({
      model,
      tools: [lookup],
      agentId: "researcher",
      system: "You research orders.",
      store,
      retry: { baseDelayMs: 1, maxDelayMs: 5 },
    });
    const lead = createAgent({
      model,
      tools: [
        researcher.asTool({ name: "research", description: "Researches orders.", share: 0.5 }),
      ],
      agentId: "lead",
      store,
      exporters: [exporter],
      budget: { maxUsd: 0.5 },
    });
    const result = await lead.run("When did A1 ship?", { runId: "run_loopback" });
    await lead.shutdown();
    expect(result).toMatchObject({ status: "completed", answer: "Order A1 shipped on Monday." });
    const childId = childRunId("run_loopback", "toolu_01Parent");
    expect(looked).toEqual([`${childId}:toolu_01Child`]);
    // Parent, child (429 then two answers), parent: five requests.
    expect(server.requests).toHaveLength(5);
    const childLog = await store.read(childId);
    expect(childLog.some((event) => event.type === "model-retry")).toBe(true);
    const start = (await store.read("run_loopback")).find(
      (event) => event.type === "child-run-start",
    );
    // Half of what the parent had left after its first step.
    expect(start).toMatchObject({ budget: { maxUsd: expect.any(Number) } });
    expect((start as { budget: { maxUsd: number } }).budget.maxUsd).toBeLessThan(0.25);
    const end = (await store.read("run_loopback")).find(
      (event) => event.type === "child-run-end",
    ) as {
      costUsd: number;
    };
    expect(end.costUsd).toBeGreaterThan(0);
    const own = (await store.read("run_loopback"))
      .filter((event) => event.type === "model-response")
      .reduce((sum, event) => sum + (event as { costUsd: number }).costUsd, 0);
    expect(result.costUsd).toBeCloseTo(own + end.costUsd, 12);
    // The child's request carried its own system prompt and tools, never the parent's.
    const childRequest = server.requests.find((request) =>
      (request.body as Body).tools?.some((item) => item.name === "lookup_order"),
    )!;
    expect(JSON.stringify(childRequest.body.system)).toContain("You research orders.");
    expect(childRequest.body.tools.map((item: { name: string }) => item.name)).toEqual([
      "lookup_order",
    ]);
    expect(JSON.stringify(childRequest.body.messages[0])).toContain("When did order A1 ship?");
    expect(new Set(exporter.spans.map((span) => span.traceId)).size).toBe(1);
  });
});
