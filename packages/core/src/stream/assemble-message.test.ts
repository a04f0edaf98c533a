import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ContentBlock, MessageStreamEvent, ModelResponse } from "../contracts/model.js";
import {
  assembleMessage,
  createMessageAssembler,
  messageEvents,
  StreamProtocolError,
} from "./assemble-message.js";

const response = (content: ContentBlock[], extra: Partial<ModelResponse> = {}): ModelResponse => ({
  id: "msg_1",
  type: "message",
  role: "assistant",
  model: "claude-opus-5-5",
  content,
  stop_reason: content.some((block) => block.type === "tool_use") ? "tool_use" : "end_turn",
  stop_sequence: null,
  usage: {
    input_tokens: 1200,
    output_tokens: 87,
    cache_creation_input_tokens: 300,
    cache_read_input_tokens: 4000,
  },
  ...extra,
});

async function* list(events: readonly MessageStreamEvent[]) {
  yield* events;
}

const assemble = (events: readonly MessageStreamEvent[]) => assembleMessage(list(events));

const blockArbitrary: fc.Arbitrary<ContentBlock> = fc.oneof(
  fc.record({ type: fc.constant("text" as const), text: fc.string({ unit: "grapheme" }) }),
  fc.record({
    type: fc.constant("thinking" as const),
    thinking: fc.string({ unit: "binary" }),
    signature: fc.base64String({ minLength: 4 }),
  }),
  fc.record({ type: fc.constant("redacted_thinking" as const), data: fc.base64String() }),
  fc.record({
    type: fc.constant("tool_use" as const),
    id: fc.stringMatching(/^toolu_[A-Za-z0-9]{4,24}$/),
    name: fc.stringMatching(/^[a-z_]{1,20}$/),
    input: fc.dictionary(fc.string(), fc.jsonValue()),
  }),
  // Keys after `input` (as the API sends `caller`) keep their place.
  fc
    .record({ id: fc.stringMatching(/^toolu_[A-Za-z0-9]{4}$/), input: fc.jsonValue() })
    .map(
      ({ id, input }) =>
        ({ type: "tool_use", id, name: "t", input, caller: { type: "direct" } }) as ContentBlock,
    ),
  fc
    .record({ text: fc.string(), citations: fc.array(fc.jsonValue(), { maxLength: 2 }) })
    .map(({ text, citations }) => ({ type: "text", citations, text }) as ContentBlock),
);

describe("assembleMessage", () => {
  it("rebuilds any response byte for byte from its events, whatever the chunk size", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(blockArbitrary, { maxLength: 6 }),
        fc.integer({ min: 1, max: 40 }),
        async (content, chunkChars) => {
          const whole = response(content);
          const rebuilt = await assemble(messageEvents(whole, { chunkChars }));
          expect(JSON.stringify(rebuilt)).toBe(JSON.stringify(whole));
        },
      ),
      { numRuns: 200 },
    );
  });

  it("keeps thinking, its signature and redacted thinking exactly as streamed", async () => {
    const thinking = "Let me check \u{1F600} the order.\n\u0000 trailing ";
    const events: MessageStreamEvent[] = [
      ...messageEvents(response([]), { ping: true }).slice(0, 2),
      {
        type: "content_block_start",
        index: 0,
        content_block: { type: "thinking", thinking: "", signature: "" },
      },
      {
        type: "content_block_delta",
        index: 0,
        delta: { type: "thinking_delta", thinking: thinking.slice(0, 13) },
      },
      {
        type: "content_block_delta",
        index: 0,
        delta: { type: "thinking_delta", thinking: thinking.slice(13) },
      },
      {
        type: "content_block_delta",
        index: 0,
        delta: { type: "signature_delta", signature: "EqQBCkYIAxgCIkD+/==" },
      },
      { type: "content_block_stop", index: 0 },
      {
        type: "content_block_start",
        index: 1,
        content_block: { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix/LafPsn4a" },
      },
      { type: "content_block_stop", index: 1 },
      {
        type: "message_delta",
        delta: { stop_reason: "end_turn", stop_sequence: null },
        usage: { output_tokens: 9 },
      },
      { type: "message_stop" },
    ];
    const message = await assemble(events);
    expect(message.content).toEqual([
      { type: "thinking", thinking, signature: "EqQBCkYIAxgCIkD+/==" },
      { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix/LafPsn4a" },
    ]);
    expect(message.usage).toEqual({
      input_tokens: 1200,
      output_tokens: 9,
      cache_creation_input_tokens: 300,
      cache_read_input_tokens: 4000,
    });
  });

  it("parses a tool input only at content_block_stop and reports text as it arrives", () => {
    const events = messageEvents(
      response([
        { type: "text", text: "Looking it up." },
        { type: "tool_use", id: "toolu_1", name: "lookup_order", input: { order_id: "A1001" } },
      ]),
      { chunkChars: 5 },
    );
    const assembler = createMessageAssembler();
    const updates = events.map((event) => assembler.push(event)).filter(Boolean);
    expect(
      updates.filter((update) => update?.type === "text").map((u) => (u as { text: string }).text),
    ).toEqual(["Looki", "ng it", " up."]);
    const blocks = updates.filter((update) => update?.type === "block");
    expect(blocks.map((update) => (update as { block: ContentBlock }).block)).toEqual([
      { type: "text", text: "Looking it up." },
      { type: "tool_use", id: "toolu_1", name: "lookup_order", input: { order_id: "A1001" } },
    ]);
    expect(assembler.finish().stop_reason).toBe("tool_use");
  });

  it("skips and records an unknown event type, delta type and content block type, and assembles the rest", () => {
    const whole = response([
      { type: "text", text: "Checking." },
      { type: "tool_use", id: "toolu_1", name: "lookup_order", input: { order_id: "A1001" } },
    ]);
    const events = messageEvents(whole, { chunkChars: 4 });
    const unknownBlock = { type: "hologram", frames: 3, caption: "a new block" };
    // After message_start: an unknown event; after the text block: a block of an unknown type
    // with a delta of an unknown type and a known delta it cannot take; the tool call moves to
    // index 2.
    const textStop = events.findIndex((event) => event.type === "content_block_stop");
    const shifted = events
      .slice(textStop + 1)
      .map((event) =>
        "index" in event ? ({ ...event, index: event.index + 1 } as MessageStreamEvent) : event,
      );
    const stream: MessageStreamEvent[] = [
      events[0]!,
      { type: "message_pause", reason: "thinking about it" } as never,
      ...events.slice(1, textStop + 1),
      { type: "content_block_start", index: 1, content_block: unknownBlock as never },
      { type: "content_block_delta", index: 1, delta: { type: "frame_delta", frame: 2 } as never },
      { type: "content_block_delta", index: 1, delta: { type: "text_delta", text: "x" } },
      { type: "content_block_delta", index: 1, delta: { type: "frame_delta", frame: 3 } as never },
      { type: "content_block_stop", index: 1 },
      ...shifted,
      { type: "message_pause" } as never,
    ];
    const assembler = createMessageAssembler();
    const updates = stream.map((event) => assembler.push(event)).filter(Boolean);
    const message = assembler.finish();
    expect(message.content).toEqual([whole.content[0], unknownBlock, whole.content[1]]);
    expect(message.stop_reason).toBe(whole.stop_reason);
    expect(assembler.skipped).toEqual([
      { kind: "event", type: "message_pause" },
      { kind: "block", type: "hologram", index: 1 },
      { kind: "delta", type: "frame_delta", index: 1 },
      { kind: "delta", type: "text_delta", index: 1 },
    ]);
    // The host is shown the text and the tool call, and the unknown block only as complete.
    expect(
      updates.filter((update) => update?.type === "text").map((u) => (u as { text: string }).text),
    ).toEqual(["Chec", "king", "."]);
  });

  const start = messageEvents(response([]), { ping: false })[0]!;
  const cases: [string, MessageStreamEvent[], string, boolean][] = [
    ["a stream that ends without message_stop", [start], "stream_cut", true],
    ["an empty stream", [], "stream_cut", true],
    [
      "a delta of an unknown type for a tool call (its input might be incomplete)",
      [
        start,
        {
          type: "content_block_start",
          index: 0,
          content_block: { type: "tool_use", id: "toolu_1", name: "issue_refund", input: {} },
        },
        { type: "content_block_delta", index: 0, delta: { type: "input_patch_delta" } as never },
      ],
      "unknown_stream_event",
      false,
    ],
    [
      "a delta without a type",
      [
        start,
        { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
        { type: "content_block_delta", index: 0, delta: {} as never },
      ],
      "malformed_stream",
      true,
    ],
    [
      "invalid JSON in a tool input delta",
      [
        start,
        {
          type: "content_block_start",
          index: 0,
          content_block: { type: "tool_use", id: "toolu_1", name: "issue_refund", input: {} },
        },
        {
          type: "content_block_delta",
          index: 0,
          delta: { type: "input_json_delta", partial_json: '{"amount": 5' },
        },
        { type: "content_block_stop", index: 0 },
      ],
      "malformed_tool_input",
      true,
    ],
    [
      "a delta for a block never started",
      [start, { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "x" } }],
      "malformed_stream",
      true,
    ],
    ["an event that is not an object", [start, "data: {" as never], "malformed_stream", true],
    [
      "content before message_start",
      [{ type: "content_block_stop", index: 0 }],
      "malformed_stream",
      true,
    ],
  ];
  it.each(cases)(
    "rejects %s with a [core] StreamProtocolError",
    async (_name, events, kind, retryable) => {
      const error = await assemble(events).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(StreamProtocolError.isInstance(error)).toBe(true);
      expect((error as StreamProtocolError).kind).toBe(kind);
      expect((error as StreamProtocolError).retryable).toBe(retryable);
      expect((error as Error).message).toMatch(/^\[core\] the model's stream /);
    },
  );
});
