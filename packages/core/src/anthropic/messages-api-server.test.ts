import { afterEach, describe, expect, it } from "vitest";
import { type MessagesApiServer, messagesApiServer } from "../testing/index.js";

let server: MessagesApiServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const headers = {
  "content-type": "application/json",
  "x-api-key": "sk-ant-test",
  "anthropic-version": "2023-06-01",
};
const body = JSON.stringify({
  model: "claude-opus-5-5",
  max_tokens: 16,
  messages: [{ role: "user", content: "Hi" }],
});

describe("messagesApiServer", () => {
  it("fills in a partial reply like the API and sends a request-id", async () => {
    server = await messagesApiServer({ replies: [{ content: "Hello" }] });
    const response = await fetch(`${server.url}/v1/messages`, { method: "POST", headers, body });
    expect(response.status).toBe(200);
    expect(response.headers.get("request-id")).toMatch(/^req_loopback_\d+$/);
    const json = await response.json();
    expect(json).toMatchObject({
      type: "message",
      role: "assistant",
      model: "claude-opus-5-5",
      content: [{ type: "text", text: "Hello" }],
      stop_reason: "end_turn",
    });
    expect(json.usage.output_tokens).toBeLessThanOrEqual(16);
    expect(server.requests[0]).toMatchObject({
      call: 1,
      method: "POST",
      path: "/v1/messages",
      rawBody: body,
      body: JSON.parse(body),
    });
  });

  it.each([
    [{ ...headers, "x-api-key": "" }, 401, "authentication_error"],
    [
      { "content-type": "application/json", "x-api-key": "sk-ant-test" },
      400,
      "invalid_request_error",
    ],
  ])("checks the headers like the API (%#)", async (sent, status, type) => {
    server = await messagesApiServer({ replies: [{ content: "never" }] });
    const response = await fetch(`${server.url}/v1/messages`, {
      method: "POST",
      headers: sent,
      body,
    });
    expect(response.status).toBe(status);
    expect(await response.json()).toMatchObject({ type: "error", error: { type } });
    expect(server.calls).toBe(0);
  });

  it("rejects bodies the API would reject, a forced tool on Opus 5.5 included", async () => {
    server = await messagesApiServer({ replies: [] });
    const bad = [
      "not json",
      JSON.stringify({ model: "claude-opus-5-5", messages: [{ role: "user", content: "Hi" }] }),
      JSON.stringify({ model: "claude-opus-5-5", max_tokens: 5, messages: [] }),
      JSON.stringify({
        model: "claude-opus-5-5",
        max_tokens: 5,
        messages: [{ role: "assistant", content: "Hi" }],
      }),
      JSON.stringify({
        model: "claude-opus-5-5",
        max_tokens: 5,
        messages: [{ role: "user", content: "Hi" }],
        tool_choice: { type: "any" },
      }),
    ];
    for (const text of bad) {
      const response = await fetch(`${server.url}/v1/messages`, {
        method: "POST",
        headers,
        body: text,
      });
      expect(response.status, text).toBe(400);
      expect((await response.json()).error.type).toBe("invalid_request_error");
    }
  });

  it("answers 404 off the messages route and 500 past the end of the script", async () => {
    server = await messagesApiServer({ replies: [] });
    expect((await fetch(`${server.url}/v1/models`, { headers })).status).toBe(404);
    const past = await fetch(`${server.url}/v1/messages`, { method: "POST", headers, body });
    expect(past.status).toBe(500);
    expect((await past.json()).error.message).toMatch(/the script has 0 replies but got request 1/);
  });

  it("sends retry-after headers and the overloaded error type", async () => {
    server = await messagesApiServer({
      replies: [
        { type: "error", status: 429, retryAfter: 2, retryAfterMs: 1500 },
        { type: "error", status: 529 },
      ],
    });
    const limited = await fetch(`${server.url}/v1/messages`, { method: "POST", headers, body });
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("2");
    expect(limited.headers.get("retry-after-ms")).toBe("1500");
    expect((await limited.json()).error.type).toBe("rate_limit_error");
    const overloaded = await fetch(`${server.url}/v1/messages`, { method: "POST", headers, body });
    expect(overloaded.status).toBe(529);
    expect(await overloaded.json()).toEqual({
      type: "error",
      error: { type: "overloaded_error", message: "Overloaded" },
    });
  });

  it("drops the connection and closes hanging requests on close()", async () => {
    server = await messagesApiServer({ replies: [{ type: "drop" }, { type: "hang" }] });
    await expect(
      fetch(`${server.url}/v1/messages`, { method: "POST", headers, body }),
    ).rejects.toThrow();
    const hanging = fetch(`${server.url}/v1/messages`, { method: "POST", headers, body }).then(
      () => "answered",
      () => "closed",
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    await server.close();
    await server.close();
    expect(await hanging).toBe("closed");
  });

  it("validates its options", async () => {
    await expect(messagesApiServer({} as never)).rejects.toThrow(/pass exactly one of handler/);
    await expect(
      messagesApiServer({ replies: [], handler: () => ({ content: "x" }) }),
    ).rejects.toThrow(/exactly one/);
  });
});
