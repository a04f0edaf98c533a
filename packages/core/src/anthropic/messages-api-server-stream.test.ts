import Anthropic, * as sdk from "@anthropic-ai/sdk";
import { afterEach, describe, expect, it } from "vitest";
import { createMessageAssembler } from "../stream/assemble-message.js";
import {
  type MessagesApiServer,
  messagesApiServer,
  promptCacheSimulator,
} from "../testing/index.js";

let server: MessagesApiServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const client = (url: string) =>
  new Anthropic({ baseURL: url, apiKey: "sk-ant-test", maxRetries: 0, logLevel: "off" });
const ask = {
  model: "claude-sonnet-5-5",
  max_tokens: 200,
  messages: [{ role: "user" as const, content: "Hi" }],
};

async function drain(stream: AsyncIterable<unknown>) {
  const types: string[] = [];
  try {
    for await (const event of stream) types.push((event as { type: string }).type);
    return { types };
  } catch (error) {
    return { types, error };
  }
}

describe("messagesApiServer streaming (real SDK)", () => {
  it("streams in the API's event order and the message assembles to the reply", async () => {
    server = await messagesApiServer({
      replies: [
        {
          content: [
            { type: "thinking", thinking: "The user greets me.", signature: "c2lnbmF0dXJl" },
            { type: "text", text: "Hello there, how can I help?" },
          ],
        },
      ],
    });
    const stream = await client(server.url).messages.create({ ...ask, stream: true });
    const assembler = createMessageAssembler();
    const types: string[] = [];
    for await (const event of stream) {
      types.push(event.type);
      assembler.push(event as never);
    }
    expect(types[0]).toBe("message_start");
    expect(types.slice(-2)).toEqual(["message_delta", "message_stop"]);
    expect(types.filter((type) => type === "content_block_start")).toHaveLength(2);
    const message = assembler.finish();
    expect(message.content).toEqual([
      { type: "thinking", thinking: "The user greets me.", signature: "c2lnbmF0dXJl" },
      { type: "text", text: "Hello there, how can I help?" },
    ]);
    expect(server.requests[0]!.stream).toBe(true);
    expect(server.requests[0]!.firstDeltaAt).toBeGreaterThan(server.requests[0]!.receivedAt);
  });

  it("sends ping and a mid-stream overloaded_error after HTTP 200; the SDK throws it as an APIError without status", async () => {
    server = await messagesApiServer({
      replies: [
        {
          type: "message",
          message: { content: "partial answer" },
          stream: { errorAfterEvents: 4 },
        },
      ],
    });
    const stream = await client(server.url).messages.create({ ...ask, stream: true });
    const { types, error } = await drain(stream);
    expect(types).toEqual(["message_start", "content_block_start", "content_block_delta"]);
    expect(error).toBeInstanceOf(sdk.APIError);
    expect((error as sdk.APIError).status).toBeUndefined();
    expect((error as sdk.APIError).type).toBe("overloaded_error");
  });

  it("cuts a stream (no message_stop) and sends malformed SSE when told", async () => {
    server = await messagesApiServer({
      replies: [
        { type: "message", message: { content: "cut short" }, stream: { cutAfterEvents: 3 } },
        {
          type: "message",
          message: { content: "x" },
          stream: { raw: "event: message_start\ndata: {not json\n\n" },
        },
      ],
    });
    const api = client(server.url);
    const cut = await drain(await api.messages.create({ ...ask, stream: true }));
    expect(cut.error).toBeUndefined();
    expect(cut.types).not.toContain("message_stop");
    const garbled = await drain(await api.messages.create({ ...ask, stream: true }));
    expect(garbled.error).toBeInstanceOf(SyntaxError);
  });
});

const longSystem = (words: number) => "You are Acme Shop's support agent. ".repeat(words);
const cached = (text: string, ttl?: "1h") => ({
  type: "text",
  text,
  cache_control: ttl ? { type: "ephemeral", ttl } : { type: "ephemeral" },
});

describe("promptCacheSimulator (as the API documents caching)", () => {
  it("writes a prefix at a breakpoint, reads it back on the next request, and misses when anything before it changes", () => {
    const cache = promptCacheSimulator();
    const body = {
      model: "claude-sonnet-5-5",
      system: [cached(longSystem(200))],
      messages: [{ role: "user", content: "Where is A1001?" }],
    };
    const first = cache.account(body);
    expect("usage" in first && first.usage.cache_creation_input_tokens).toBeGreaterThan(1024);
    expect("usage" in first && first.usage.cache_read_input_tokens).toBe(0);
    const second = cache.account({ ...body, messages: [{ role: "user", content: "And A1002?" }] });
    if (!("usage" in first) || !("usage" in second)) throw new Error("unexpected error");
    expect(second.usage.cache_read_input_tokens).toBe(first.usage.cache_creation_input_tokens);
    expect(second.usage.cache_creation_input_tokens).toBe(0);
    const changed = cache.account({ ...body, system: [cached(`${longSystem(200)}!`)] });
    expect("usage" in changed && changed.usage.cache_read_input_tokens).toBe(0);
  });

  it("caches nothing below the model's minimum length (Opus 4 096, Sonnet 1 024)", () => {
    const cache = promptCacheSimulator();
    const body = (model: string) => ({
      model,
      system: [cached(longSystem(300))],
      messages: [{ role: "user", content: "Hi" }],
    });
    const sonnet = cache.account(body("claude-sonnet-5-5"));
    const opus = cache.account(body("claude-opus-5-5"));
    expect("usage" in sonnet && sonnet.usage.cache_creation_input_tokens).toBeGreaterThan(0);
    expect("usage" in opus && opus.usage.cache_creation_input_tokens).toBe(0);
  });

  it("keeps a 5-minute entry 5 minutes from its last use and a 1-hour entry an hour", () => {
    let clock = 0;
    const cache = promptCacheSimulator({ now: () => clock });
    const five = {
      model: "claude-sonnet-5-5",
      system: [cached(longSystem(200))],
      messages: [{ role: "user", content: "Hi" }],
    };
    const hour = { ...five, system: [cached(longSystem(201), "1h")] };
    cache.account(five);
    cache.account(hour);
    clock = 4 * 60_000;
    expect(cache.account(five)).toMatchObject({ usage: { cache_creation_input_tokens: 0 } });
    clock = 8 * 60_000; // 4 minutes after the last hit: still there
    expect(cache.account(five)).toMatchObject({ usage: { cache_creation_input_tokens: 0 } });
    clock = 14 * 60_000; // 6 minutes idle: gone
    const missed = cache.account(five);
    expect("usage" in missed && missed.usage.cache_read_input_tokens).toBe(0);
    clock = 50 * 60_000;
    const hourly = cache.account(hour);
    expect("usage" in hourly && hourly.usage.cache_read_input_tokens).toBeGreaterThan(0);
    expect(
      cache.account({
        ...five,
        system: [cached("x", "1h")],
        messages: [{ role: "user", content: [cached("y")] }],
      }),
    ).toHaveProperty("usage");
  });

  it("finds a prefix written at an earlier breakpoint up to 20 blocks back (the moving tail)", () => {
    const cache = promptCacheSimulator();
    const turns = (count: number) =>
      Array.from({ length: count }, (_, index) => ({
        role: index % 2 === 0 ? "user" : "assistant",
        content: [{ type: "text", text: `turn ${index} ${"lorem ipsum ".repeat(60)}` }],
      }));
    const withTail = (count: number) => {
      const messages = turns(count);
      const last = messages[count - 1]!;
      last.content = [{ ...last.content[0]!, cache_control: { type: "ephemeral" } } as never];
      return { model: "claude-sonnet-5-5", messages };
    };
    const first = cache.account(withTail(9));
    const second = cache.account(withTail(11));
    if (!("usage" in first) || !("usage" in second)) throw new Error("unexpected error");
    expect(second.usage.cache_read_input_tokens).toBe(first.usage.cache_creation_input_tokens);
    expect(second.usage.cache_creation_input_tokens).toBeGreaterThan(0);
    // 30 blocks later the earlier entry is out of the lookback window.
    const far = cache.account(withTail(41));
    expect("usage" in far && far.usage.cache_read_input_tokens).toBe(0);
  });

  it("refuses more than 4 breakpoints and a breakpoint on a thinking block, like the API", async () => {
    const cache = promptCacheSimulator();
    expect(
      cache.account({
        model: "claude-sonnet-5-5",
        system: [cached("a"), cached("b"), cached("c"), cached("d"), cached("e")],
        messages: [{ role: "user", content: "Hi" }],
      }),
    ).toEqual({ error: "A maximum of 4 blocks with cache_control may be provided. Found 5." });
    server = await messagesApiServer({ replies: [{ content: "never" }] });
    const error = await client(server.url)
      .messages.create({
        ...ask,
        messages: [
          { role: "user", content: "Hi" },
          {
            role: "assistant",
            content: [
              {
                type: "thinking",
                thinking: "t",
                signature: "s",
                cache_control: { type: "ephemeral" },
              } as never,
            ],
          },
          { role: "user", content: "Go on" },
        ],
      })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(sdk.BadRequestError);
  });

  it("reports cache reads and writes in the usage of a real SDK call", async () => {
    server = await messagesApiServer({ replies: [{ content: "a" }, { content: "b" }] });
    const body = { ...ask, system: [cached(longSystem(200))] as never };
    const api = client(server.url);
    const first = await api.messages.create(body);
    const second = await api.messages.create(body);
    expect(first.usage.cache_creation_input_tokens).toBeGreaterThan(1024);
    expect(second.usage.cache_read_input_tokens).toBe(first.usage.cache_creation_input_tokens);
    expect(server.cache?.entries).toBe(1);
  });
});
