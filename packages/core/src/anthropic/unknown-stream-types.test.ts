import * as v from "valibot";
import { afterEach, describe, expect, it } from "vitest";
import type { MessageStreamEvent, ModelResponse } from "../contracts/model.js";
import { createAgent, tool } from "../index.js";
import { messageEvents } from "../stream/assemble-message.js";
import { type MessagesApiServer, memoryEventStore, messagesApiServer } from "../testing/index.js";
import { claudeModel } from "./index.js";

// The API adds stream event types and content block types. One this version of loopguard does
// not know must not fail the run: it is skipped (an event, a delta) or kept unread (a block, so
// the next request hands the API its own block back), and recorded in the log.

const fakeKey = "sk-ant-test-not-a-real-key";
let server: MessagesApiServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const unknownBlock = { type: "hologram", frames: 3, caption: "a block from a newer API" };

/** The SSE body of a reply that asks for a tool, with one unknown event, block and delta in it. */
function sseWithUnknownTypes(): string {
  const whole: ModelResponse = {
    id: "msg_new_types",
    type: "message",
    role: "assistant",
    model: "claude-sonnet-5-5",
    content: [
      { type: "text", text: "Let me check that order." },
      { type: "tool_use", id: "toolu_lookup", name: "lookup_order", input: { order_id: "A1001" } },
    ],
    stop_reason: "tool_use",
    stop_sequence: null,
    usage: { input_tokens: 120, output_tokens: 30 },
  };
  const events = messageEvents(whole, { chunkChars: 6 });
  const textStop = events.findIndex((event) => event.type === "content_block_stop");
  const later = events
    .slice(textStop + 1)
    .map((event) =>
      "index" in event ? ({ ...event, index: event.index + 1 } as MessageStreamEvent) : event,
    );
  const stream: Array<{ type: string } & Record<string, unknown>> = [
    events[0]!,
    { type: "message_checkpoint", note: "an event type from a newer API" },
    ...events.slice(1, textStop + 1),
    { type: "content_block_start", index: 1, content_block: unknownBlock },
    { type: "content_block_delta", index: 1, delta: { type: "frame_delta", frame: 1 } },
    { type: "content_block_stop", index: 1 },
    ...later,
  ];
  return stream.map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`).join("");
}

describe("claudeModel with stream event and block types newer than loopguard (real SDK, loopback server)", () => {
  it("skips an unknown event and delta, keeps an unknown block unread, records each in the log, and the run completes", async () => {
    server = await messagesApiServer({
      replies: [
        { type: "message", message: { content: "" }, stream: { raw: sseWithUnknownTypes() } },
        { type: "message", message: { content: "Order A1001 is on its way." } },
      ],
    });
    const looked: string[] = [];
    const store = memoryEventStore();
    const agent = createAgent({
      model: claudeModel({ baseURL: server.url, apiKey: fakeKey, model: "claude-sonnet-5-5" }),
      tools: [
        tool({
          name: "lookup_order",
          description: "Look up an order.",
          input: v.object({ order_id: v.string() }),
          run: ({ order_id }) => {
            looked.push(order_id);
            return { order_id, status: "shipped" };
          },
        }),
      ],
      store,
      retry: { baseDelayMs: 1 },
    });
    const result = await agent.run("Where is order A1001?");
    expect(result.status, result.error).toBe("completed");
    expect(result.answer).toBe("Order A1001 is on its way.");
    expect(looked).toEqual(["A1001"]);

    const log = await store.read(result.runId);
    const first = log.find((event) => event.type === "model-response" && event.step === 1);
    expect(first).toMatchObject({
      skipped: [
        { kind: "event", type: "message_checkpoint" },
        { kind: "block", type: "hologram", index: 1 },
        { kind: "delta", type: "frame_delta", index: 1 },
      ],
      // Not retried: nothing about the reply was wrong.
      attempts: 1,
    });
    expect(log.some((event) => event.type === "model-retry" || event.type === "model-error")).toBe(
      false,
    );
    const second = log.find((event) => event.type === "model-response" && event.step === 2);
    expect(second).not.toHaveProperty("skipped");

    // The next request hands the API its own block back, as it came, between the text and the
    // tool call.
    const messages = server.requests[1]!.body.messages as Array<{
      role: string;
      content: Array<{ type: string }>;
    }>;
    const assistant = messages.find((message) => message.role === "assistant")!;
    expect(assistant.content.map((block) => block.type)).toEqual(["text", "hologram", "tool_use"]);
    expect(assistant.content[1]).toEqual(unknownBlock);
  });
});
