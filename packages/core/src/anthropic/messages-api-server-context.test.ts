import Anthropic from "@anthropic-ai/sdk";
import { afterEach, describe, expect, it } from "vitest";
import { InvalidArgumentError } from "../errors.js";
import { loopbackTokenCount, type MessagesApiServer, messagesApiServer } from "../testing/index.js";

const fakeKey = "sk-ant-test-not-a-real-key";
let server: MessagesApiServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const request = (text: string) => ({
  model: "claude-sonnet-5-5",
  max_tokens: 64,
  system: "You are terse.",
  messages: [{ role: "user" as const, content: text }],
});

describe("messagesApiServer context limit (real SDK)", () => {
  it("refuses a prompt over the limit with the API's error body, and answers one at the limit", async () => {
    const atLimit = request("x".repeat(400));
    const limit = loopbackTokenCount(atLimit);
    server = await messagesApiServer({ handler: () => ({ content: "ok" }), contextLimit: limit });
    const client = new Anthropic({ baseURL: server.url, apiKey: fakeKey, maxRetries: 0 });
    const ok = await client.messages.create(atLimit);
    const usage = ok.usage;
    // The reported prompt tokens are the server's count of the same request.
    expect(
      usage.input_tokens +
        (usage.cache_creation_input_tokens ?? 0) +
        (usage.cache_read_input_tokens ?? 0),
    ).toBe(limit);
    const over = request("x".repeat(404));
    const error = await client.messages.create(over).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect((error as InstanceType<typeof Anthropic.BadRequestError>).status).toBe(400);
    expect((error as InstanceType<typeof Anthropic.BadRequestError>).error).toEqual({
      type: "error",
      error: {
        type: "invalid_request_error",
        message: `prompt is too long: ${limit + 1} tokens > ${limit} maximum`,
      },
    });
    expect(server.refusedTooLong).toBe(1);
    // The script was never asked for the refused request.
    expect(server.calls).toBe(1);
  });

  it("counts tokens at POST /v1/messages/count_tokens with the same count", async () => {
    server = await messagesApiServer({ replies: [] });
    const client = new Anthropic({ baseURL: server.url, apiKey: fakeKey, maxRetries: 0 });
    const body = request("a longer message, with some words in it");
    const { max_tokens: _unused, ...countable } = body;
    const counted = await client.messages.countTokens(countable);
    expect(counted.input_tokens).toBe(loopbackTokenCount(body));
    expect(counted.input_tokens).toBeGreaterThan(0);
    expect(server.calls).toBe(0);
  });

  it("rejects a context limit that is not a positive whole number", async () => {
    await expect(messagesApiServer({ replies: [], contextLimit: 0 })).rejects.toThrow(
      InvalidArgumentError,
    );
    await expect(messagesApiServer({ replies: [], contextLimit: 1.5 })).rejects.toThrow(
      /contextLimit must be a positive whole number/,
    );
  });
});
