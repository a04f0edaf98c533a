import * as sdk from "@anthropic-ai/sdk";
import { describe, expect, it } from "vitest";
import { classifyClaudeError } from "../anthropic/classify-claude-error.js";
import type { MessageStreamEvent, ModelRequest } from "../contracts/model.js";
import { assembleMessage, StreamProtocolError } from "../stream/assemble-message.js";
import { faultyModel } from "./faulty-model.js";
import { scriptedModel } from "./scripted-model.js";

const request: ModelRequest = {
  model: "claude-sonnet-5-5",
  max_tokens: 1000,
  messages: [{ role: "user", content: "Where is A1001?" }],
};
const signal = () => new AbortController().signal;
const replies = () => [
  {
    content: [
      { type: "text" as const, text: "Let me look that up for you." },
      {
        type: "tool_use" as const,
        id: "toolu_1",
        name: "lookup_order",
        input: { order_id: "A1001" },
      },
    ],
  },
];

async function collect(events: AsyncIterable<MessageStreamEvent>) {
  const seen: MessageStreamEvent[] = [];
  try {
    for await (const event of events) seen.push(event);
    return { seen };
  } catch (error) {
    return { seen, error };
  }
}

describe("scriptedModel.stream", () => {
  it("streams the same message create() returns, in API event order", async () => {
    const created = await scriptedModel(replies()).create(request, { signal: signal() });
    const events = scriptedModel(replies(), { chunkChars: 4 }).stream!(request, {
      signal: signal(),
    });
    const { seen } = await collect(events);
    expect(seen[0]!.type).toBe("message_start");
    expect(seen[1]!.type).toBe("ping");
    expect(seen.at(-2)!.type).toBe("message_delta");
    expect(seen.at(-1)!.type).toBe("message_stop");
    expect(seen.filter((event) => event.type === "content_block_delta").length).toBeGreaterThan(8);
    async function* again() {
      yield* seen;
    }
    expect(await assembleMessage(again())).toEqual(created);
  });

  it("has no stream() with noStream", () => {
    expect(scriptedModel(replies(), { noStream: true }).stream).toBeUndefined();
  });
});

describe("faultyModel.stream", () => {
  it("throws the SDK's mid-stream overloaded_error after the chosen events; the classifier retries it", async () => {
    const model = faultyModel(scriptedModel(replies()), {
      streamErrors: { 1: { afterEvents: 3 } },
    });
    const { seen, error } = await collect(model.stream!(request, { signal: signal() }));
    expect(seen).toHaveLength(3);
    expect(error).toBeInstanceOf(sdk.APIError);
    expect((error as sdk.APIError).status).toBeUndefined();
    expect(classifyClaudeError(error)).toMatchObject({ retryable: true, kind: "overloaded" });
    expect(model.injected).toEqual([{ call: 1, fault: "stream_error" }]);
  });

  it("cuts a stream so the assembler reports it cut", async () => {
    const model = faultyModel(scriptedModel(replies()), { cuts: { 1: 5 } });
    const error = await assembleMessage(model.stream!(request, { signal: signal() })).catch(
      (caught) => caught,
    );
    expect(StreamProtocolError.isInstance(error)).toBe(true);
    expect(error.kind).toBe("stream_cut");
  });

  it("stalls until the caller aborts", async () => {
    const model = faultyModel(scriptedModel(replies()), { stalls: { 1: 2 } });
    const controller = new AbortController();
    const seen: string[] = [];
    const done = (async () => {
      for await (const event of model.stream!(request, { signal: controller.signal }))
        seen.push(event.type);
    })().catch((caught) => caught);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(seen).toEqual(["message_start", "ping"]);
    controller.abort(new Error("idle"));
    expect(((await done) as Error).message).toBe("idle");
  });

  it("garbles tool input JSON so it fails only at content_block_stop", async () => {
    const model = faultyModel(scriptedModel(replies()), { invalidToolJson: [1] });
    const error = await assembleMessage(model.stream!(request, { signal: signal() })).catch(
      (caught) => caught,
    );
    expect(error.kind).toBe("malformed_tool_input");
    expect(error.message).toContain("lookup_order");
  });

  it("streams rewritten replies (pause_turn) and passes healthy calls through", async () => {
    const model = faultyModel(scriptedModel([...replies(), { content: "done" }]), {
      pauseTurn: [1],
    });
    const first = await assembleMessage(model.stream!(request, { signal: signal() }));
    expect(first.stop_reason).toBe("pause_turn");
    expect(first.content).toEqual([{ type: "text", text: "Let me look that up for you." }]);
    const second = await assembleMessage(model.stream!(request, { signal: signal() }));
    expect(second.content).toEqual([{ type: "text", text: "done" }]);
  });

  it("checks its stream fault options", () => {
    expect(() => faultyModel(scriptedModel([]), { cuts: { 0: 1 } })).toThrow(
      /\[core\] faultyModel: cuts/,
    );
    expect(() => faultyModel(scriptedModel([]), { streamErrors: { 1: {} as never } })).toThrow(
      /afterEvents/,
    );
  });
});
