import * as v from "valibot";
import { afterEach, describe, expect, it } from "vitest";
import { claudeModel } from "./anthropic/index.js";
import { breakerOf } from "./breakers.js";
import type { ModelRequest } from "./contracts/model.js";
import { type AgentOptions, createAgent, ToolError, tool } from "./index.js";
import {
  faultyModel,
  faultyTool,
  flakyTool,
  hangingTool,
  type MessagesApiServer,
  memoryEventStore,
  messagesApiServer,
  type ScriptedReply,
  type ServerReply,
  scriptedModel,
  slowTool,
} from "./testing/index.js";

const fakeKey = "sk-ant-test-not-a-real-key";
/**
 * How long the slow parts of these tests take: longer than any test may run, so a run that
 * waited for one fails on the test timeout, whatever the machine's pace. No test here asserts
 * an upper bound on how fast a machine is.
 */
const never = 600_000;

/** Resolves once `condition()` holds; polls every 5 ms, with a deadline far above any machine's pace. */
async function until(condition: () => boolean, deadlineMs = 60_000): Promise<void> {
  const started = Date.now();
  while (!condition()) {
    if (Date.now() - started > deadlineMs)
      throw new Error(`condition not met within ${deadlineMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const lookupOrder = () =>
  tool({
    name: "lookup_order",
    description: "Look up an order by its id.",
    input: v.object({ order_id: v.string() }),
    run: async ({ order_id }) => ({ order_id, status: "delivered" }),
  });
const idempotentLookup = () =>
  tool({
    name: "lookup_order",
    description: "Look up an order by its id.",
    input: v.object({ order_id: v.string() }),
    idempotent: true,
    run: async ({ order_id }) => ({ order_id, status: "delivered" }),
  });

const callLookup = (id = "toolu_1"): ScriptedReply => ({
  content: [{ type: "tool_use", id, name: "lookup_order", input: { order_id: "A1001" } }],
});
const answer = (text = "Done."): ScriptedReply => ({ content: text });

let server: MessagesApiServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function claudeAgainst(
  replies: ServerReply[],
  agentOptions: {
    retry?: { maxAttempts?: number; baseDelayMs?: number; random?: () => number };
  } = {},
) {
  server = await messagesApiServer({ replies });
  const store = memoryEventStore();
  const agent = createAgent({
    model: claudeModel({ baseURL: server.url, apiKey: fakeKey, timeoutMs: 5_000 }),
    tools: [lookupOrder()],
    store,
    retry: { baseDelayMs: 20, ...agentOptions.retry },
  });
  return { agent, store, api: server };
}

const ok: ServerReply = { type: "message", message: { content: "All good." } };

describe("model retries (real SDK errors from the loopback server)", () => {
  it.each([
    [
      "429 with retry-after-ms",
      { type: "error", status: 429, retryAfterMs: 200 } as ServerReply,
      "rate_limit",
      429,
      200,
    ],
    [
      "500 with retry-after-ms",
      { type: "error", status: 500, retryAfterMs: 150 } as ServerReply,
      "server_error",
      500,
      150,
    ],
    [
      "529 overloaded with retry-after (seconds)",
      { type: "error", status: 529, retryAfter: 1 } as ServerReply,
      "overloaded",
      529,
      1000,
    ],
  ])(
    "retries %s after the wait the server asked for",
    async (_name, failure, kind, status, waitMs) => {
      const { agent, store, api } = await claudeAgainst([failure, ok]);
      const result = await agent.run("Hi");
      expect(result.status).toBe("completed");
      expect(api.requests).toHaveLength(2);
      const gap = api.requests[1]!.receivedAt - api.requests[0]!.receivedAt;
      expect(gap).toBeGreaterThanOrEqual(waitMs - 2);
      expect(gap).toBeLessThan(waitMs + 2_000);
      const retries = (await store.read(result.runId)).filter(
        (event) => event.type === "model-retry",
      );
      expect(retries).toEqual([
        expect.objectContaining({ type: "model-retry", step: 1, attempt: 1, kind, status, waitMs }),
      ]);
      const response = (await store.read(result.runId)).find(
        (event) => event.type === "model-response",
      );
      expect(response).toMatchObject({ attempts: 2 });
    },
  );

  it("retries a dropped connection with jittered exponential backoff", async () => {
    const { agent, store, api } = await claudeAgainst([{ type: "drop" }, { type: "drop" }, ok], {
      retry: { baseDelayMs: 100, random: () => 0.99 },
    });
    const result = await agent.run("Hi");
    expect(result.status).toBe("completed");
    expect(api.requests).toHaveLength(3);
    const retries = (await store.read(result.runId)).filter(
      (event) => event.type === "model-retry",
    );
    // Full jitter: floor(random * base * 2^(attempt-1)) = 99, then 198.
    expect(
      retries.map((event) => [
        event.type === "model-retry" && event.kind,
        event.type === "model-retry" && event.waitMs,
      ]),
    ).toEqual([
      ["connection", 99],
      ["connection", 198],
    ]);
    expect(api.requests[1]!.receivedAt - api.requests[0]!.receivedAt).toBeGreaterThanOrEqual(97);
    expect(api.requests[2]!.receivedAt - api.requests[1]!.receivedAt).toBeGreaterThanOrEqual(196);
  });

  it("caps attempts at retry.maxAttempts and then fails with a clear message", async () => {
    const overloaded: ServerReply = { type: "error", status: 529, retryAfterMs: 10 };
    const { agent, store, api } = await claudeAgainst(
      [overloaded, overloaded, overloaded, overloaded, ok],
      { retry: { maxAttempts: 3 } },
    );
    const result = await agent.run("Hi");
    expect(api.requests).toHaveLength(3);
    expect(result.status).toBe("failed");
    expect(result.error).toMatch(
      /^\[core\] the model call failed \(overloaded 529\) after 3 attempts: 529 .*Overloaded/,
    );
    const events = await store.read(result.runId);
    expect(events.filter((event) => event.type === "model-retry")).toHaveLength(2);
    expect(events.find((event) => event.type === "model-error")).toMatchObject({
      kind: "overloaded",
      status: 529,
      attempts: 3,
    });
  });

  it.each([
    [400, /the request was rejected as invalid \(400\).*after 1 attempt: 400/],
    [401, /the API key was rejected \(401\).*after 1 attempt/],
    [403, /may not use this model or feature \(403\).*after 1 attempt/],
    [404, /was not found \(404\); check the model id after 1 attempt/],
    [413, /too large \(413\).*after 1 attempt/],
  ])(
    "%i fails after ONE attempt with a clear message and status failed",
    async (status, message) => {
      const { agent, store, api } = await claudeAgainst([{ type: "error", status }, ok]);
      const result = await agent.run("Hi");
      expect(api.requests).toHaveLength(1);
      expect(result.status).toBe("failed");
      expect(result.error).toMatch(/^\[core\] /);
      expect(result.error).toMatch(message);
      const events = await store.read(result.runId);
      expect(events.some((event) => event.type === "model-retry")).toBe(false);
      expect(events.at(-1)).toMatchObject({ type: "run-end", status: "failed" });
    },
  );

  it("faultyModel throws real SDK errors the loop retries like the network ones", async () => {
    const model = faultyModel(scriptedModel([callLookup(), answer()]), {
      errors: { 1: "429", 2: "529", 4: "connection" },
      retryAfterMs: 5,
    });
    const store = memoryEventStore();
    const agent = createAgent({ model, tools: [lookupOrder()], store, retry: { baseDelayMs: 5 } });
    const result = await agent.run("Hi");
    expect(result.status).toBe("completed");
    expect(model.calls).toBe(5);
    expect(model.innerCalls).toBe(2);
    const retries = (await store.read(result.runId)).filter(
      (event) => event.type === "model-retry",
    );
    expect(
      retries.map(
        (event) => event.type === "model-retry" && [event.step, event.kind, event.waitMs],
      ),
    ).toEqual([
      [1, "rate_limit", 5],
      [1, "overloaded", 5],
      [2, "connection", expect.any(Number)],
    ]);
  });

  it("faultyModel's reply faults: malformed tool input, max_tokens, pause_turn, refusal", async () => {
    const base = () =>
      scriptedModel((_request, call) =>
        call % 2 === 1 ? callLookup(`toolu_${call}`) : answer("Fine."),
      );
    // A tool call whose input is not an object is refused at validation and the run goes on.
    const malformed = faultyModel(base(), { malformedToolInput: [1] });
    const tools = [lookupOrder()];
    const first = await createAgent({ model: malformed, tools }).run("Hi");
    expect(first.status).toBe("completed");
    expect(first.blocked).toHaveLength(1);
    expect(first.blocked[0]!.decision.refusedAt).toBe("1:validation");

    const cut = await createAgent({ model: faultyModel(base(), { maxTokens: [1] }), tools }).run(
      "Hi",
    );
    expect(cut).toMatchObject({ status: "stopped", why: "max_tokens" });

    const pausedModel = faultyModel(scriptedModel([answer("Working"), answer("Finished.")]), {
      pauseTurn: [1],
    });
    const paused = await createAgent({ model: pausedModel, tools }).run("Hi");
    expect(paused).toMatchObject({ status: "completed", answer: "Finished.", steps: 2 });

    const refused = await createAgent({ model: faultyModel(base(), { refusal: [1] }), tools }).run(
      "Hi",
    );
    expect(refused).toMatchObject({ status: "stopped", why: "refusal" });
  });
});

describe("timeouts and cancellation", () => {
  it("cuts a tool that never answers off at its 1 s timeout; the run goes on", async () => {
    const hanging = hangingTool(
      tool({
        name: "lookup_order",
        description: "Look up an order.",
        input: v.object({ order_id: v.string() }),
        timeoutMs: 1_000,
        run: async () => "late",
      }),
      never,
    );
    const model = scriptedModel([callLookup(), answer("The lookup timed out; try later.")]);
    const store = memoryEventStore();
    const started = performance.now();
    const result = await createAgent({ model, tools: [hanging], store }).run("Where is A1001?");
    const elapsed = performance.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(990);
    // The tool never answers: a run that waited for it would not finish at all.
    expect(elapsed).toBeLessThan(never);
    expect(result.status).toBe("completed");
    const toolResult = (await store.read(result.runId)).find(
      (event) => event.type === "tool-call-result",
    );
    expect(toolResult).toMatchObject({
      status: "error",
      isError: true,
      errorKind: "timeout",
      attempts: 1,
    });
    expect(model.requests[1]!.messages[2]!.content).toEqual([
      expect.objectContaining({ type: "tool_result", tool_use_id: "toolu_1", is_error: true }),
    ]);
    expect(hanging.calls).toBe(1);
    expect(hanging.effects).toBe(0);
  });

  it("a late completion of an abandoned tool changes nothing", async () => {
    const hanging = hangingTool(
      tool({
        name: "lookup_order",
        description: "Look up an order.",
        input: v.object({ order_id: v.string() }),
        timeoutMs: 50,
        run: async () => "late result",
      }),
      250,
    );
    const store = memoryEventStore();
    const result = await createAgent({
      model: scriptedModel([callLookup(), answer()]),
      tools: [hanging],
      store,
    }).run("Hi");
    const before = await store.read(result.runId);
    await until(() => hanging.lateEffects === 1);
    expect(hanging.effects).toBe(1);
    expect(hanging.lateEffects).toBe(1);
    expect(await store.read(result.runId)).toEqual(before);
    expect(JSON.stringify(before)).not.toContain("late result");
  });

  it("the wall-clock budget ends a run on time", async () => {
    const slow = slowTool(lookupOrder(), never);
    const store = memoryEventStore();
    const started = performance.now();
    const result = await createAgent({
      model: scriptedModel([
        {
          ...callLookup(),
          content: [{ type: "text", text: "Checking." }, ...(callLookup().content as [])],
        },
        answer(),
      ]),
      tools: [slow],
      store,
      budget: { wallClockMs: 300 },
    }).run("Hi");
    const elapsed = performance.now() - started;
    expect(result).toMatchObject({
      status: "stopped",
      limit: "wallClockMs",
      why: "wall_clock",
      answer: "Checking.",
    });
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(never);
    expect(slow.effects).toBe(0);
  });

  it("the wall-clock budget also cuts a slow model call", async () => {
    const started = performance.now();
    const result = await createAgent({
      model: scriptedModel([{ content: "late", delayMs: never }]),
      tools: [],
      budget: { wallClockMs: 200 },
    }).run("Hi");
    expect(result).toMatchObject({ status: "stopped", limit: "wallClockMs" });
    expect(performance.now() - started).toBeLessThan(never);
  });

  it("agent.run(task, { signal }) cancels from outside", async () => {
    const slow = slowTool(lookupOrder(), never);
    const controller = new AbortController();
    // Cancel once the tool is running (an event, not a guess at how long set-up takes).
    void until(() => slow.calls === 1).then(() => controller.abort());
    const started = performance.now();
    const result = await createAgent({
      model: scriptedModel([callLookup(), answer()]),
      tools: [slow],
    }).run("Hi", { signal: controller.signal });
    expect(result).toMatchObject({ status: "stopped", why: "cancelled" });
    expect(performance.now() - started).toBeLessThan(never);
    expect(slow.calls).toBe(1);
    expect(slow.effects).toBe(0);
  });

  it("an HTTP call in flight is aborted by cancellation (the loopback server sees one request)", async () => {
    const controller = new AbortController();
    // Cancel once the server holds the request: the abort must reach a call in flight.
    server = await messagesApiServer({
      handler: () => {
        setImmediate(() => controller.abort());
        return { type: "hang" };
      },
    });
    const started = performance.now();
    const agent = createAgent({
      model: claudeModel({ baseURL: server.url, apiKey: fakeKey }),
      tools: [],
    });
    const result = await agent.run("Hi", { signal: controller.signal });
    expect(result).toMatchObject({ status: "stopped", why: "cancelled" });
    expect(performance.now() - started).toBeLessThan(never);
    expect(server.requests).toHaveLength(1);
  });
});

/** A run that calls `tool` once (retries 1 ms apart): its result and the logged tool result. */
async function callOnce(tool: AgentOptions["tools"][number]) {
  const store = memoryEventStore();
  const result = await createAgent({
    model: scriptedModel([callLookup(), answer()]),
    tools: [tool],
    store,
    toolRetry: { delayMs: 1 },
  }).run("Hi");
  const logged = (await store.read(result.runId)).find(
    (event) => event.type === "tool-call-result",
  );
  return { result, logged };
}

describe("tool retries and circuit breakers", () => {
  it("retries an idempotent tool on a transient failure", async () => {
    const flaky = flakyTool(idempotentLookup(), 2);
    const { result, logged } = await callOnce(flaky);
    expect(flaky.calls).toBe(3);
    expect(flaky.effects).toBe(1);
    expect(flaky.contexts.map((context) => context.attempt)).toEqual([1, 2, 3]);
    expect(new Set(flaky.contexts.map((context) => context.idempotencyKey))).toEqual(
      new Set([`${result.runId}:toolu_1`]),
    );
    expect(logged).toMatchObject({ status: "ok", attempts: 3 });
  });

  it("never retries a non-idempotent tool", async () => {
    const flaky = flakyTool(lookupOrder(), 2);
    const { logged } = await callOnce(flaky);
    expect(flaky.calls).toBe(1);
    expect(flaky.effects).toBe(0);
    expect(logged).toMatchObject({ status: "error", errorKind: "tool_error", attempts: 1 });
  });

  it("does not retry an idempotent tool on a permanent failure", async () => {
    const flaky = flakyTool(idempotentLookup(), 2, { transient: false });
    await createAgent({
      model: scriptedModel([callLookup(), answer()]),
      tools: [flaky],
      toolRetry: { delayMs: 1 },
    }).run("Hi");
    expect(flaky.calls).toBe(1);
  });

  it("stops retrying at toolRetry.maxAttempts", async () => {
    const failing = faultyTool(idempotentLookup(), { mode: "fail-always" });
    await createAgent({
      model: scriptedModel([callLookup(), answer()]),
      tools: [failing],
      toolRetry: { maxAttempts: 4, delayMs: 1 },
    }).run("Hi");
    expect(failing.calls).toBe(4);
  });

  it("opens after N consecutive failures, refuses at 4:circuit_breaker with a hint, half-opens after the cooldown and closes on a good probe", async () => {
    let clock = 1_000_000;
    const now = () => clock;
    // Fails twice, then works.
    const flaky = faultyTool(lookupOrder(), { mode: "fail-times", times: 2 });
    const seenBreakerStates: string[] = [];
    const breaker = { failureThreshold: 2, cooldownMs: 60_000, now };
    const model = scriptedModel((_request: ModelRequest, call: number) => {
      // breakerOf creates the breaker on first use with the options it is given: pass the agent's.
      seenBreakerStates.push(breakerOf(flaky, breaker).state);
      if (call === 4) clock += 60_000; // the cooldown passes before the fourth call
      return call <= 5 ? callLookup(`toolu_${call}`) : answer("Done.");
    });
    const store = memoryEventStore();
    const result = await createAgent({ model, tools: [flaky], store, breaker }).run("Hi");
    expect(result.status).toBe("completed");
    // Calls 1 and 2 fail (the breaker opens), call 3 is refused without running, call 4 is the probe and works, call 5 runs normally.
    expect(flaky.calls).toBe(3 + 1);
    expect(result.blocked).toHaveLength(1);
    const refusal = result.blocked[0]!;
    expect(refusal).toMatchObject({ toolUseId: "toolu_3", reason: "circuit_open" });
    expect(refusal.decision.refusedAt).toBe("4:circuit_breaker");
    expect(refusal.decision.fixHints?.[0]).toMatch(/Do not call this tool again now/);
    expect(refusal.message).toMatch(/paused for 60 s/);
    expect(seenBreakerStates).toEqual(["closed", "closed", "open", "open", "closed", "closed"]);
    expect(breakerOf(flaky, breaker).state).toBe("closed");
    const results = (await store.read(result.runId)).filter(
      (event) => event.type === "tool-call-result",
    );
    expect(
      results.map((event) => event.type === "tool-call-result" && [event.toolUseId, event.status]),
    ).toEqual([
      ["toolu_1", "error"],
      ["toolu_2", "error"],
      ["toolu_4", "ok"],
      ["toolu_5", "ok"],
    ]);
  });

  it("a failed probe opens the breaker again", async () => {
    let clock = 0;
    const failing = faultyTool(lookupOrder(), { mode: "fail-always" });
    const model = scriptedModel((_request: ModelRequest, call: number) => {
      if (call === 3) clock += 1_000;
      return call <= 4 ? callLookup(`toolu_${call}`) : answer();
    });
    const breaker = { failureThreshold: 1, cooldownMs: 1_000, now: () => clock };
    const result = await createAgent({ model, tools: [failing], breaker }).run("Hi");
    // 1 fails (opens), 2 refused, 3 is the probe and fails (opens again), 4 refused.
    expect(failing.calls).toBe(2);
    expect(result.blocked.map((call) => call.toolUseId)).toEqual(["toolu_2", "toolu_4"]);
    expect(breakerOf(failing, breaker).state).toBe("open");
  });
});

describe("no unhandled rejection", () => {
  it("a run full of faults leaves no unhandled rejection behind", async () => {
    const seen: unknown[] = [];
    const onUnhandled = (reason: unknown) => seen.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      // A handler that rejects after it was abandoned, an exporter and hooks that throw,
      // model errors of every kind, an idempotent tool that keeps failing.
      const lateReject = tool({
        name: "lookup_order",
        description: "Look up an order.",
        input: v.object({ order_id: v.string() }),
        timeoutMs: 20,
        run: () =>
          new Promise((_resolve, reject) =>
            setTimeout(() => reject(new ToolError("too late")), 60),
          ),
      });
      const failing = faultyTool(
        tool({
          name: "refund",
          description: "Refund.",
          input: v.object({ order_id: v.string() }),
          idempotent: true,
          run: async () => "ok",
        }),
        { mode: "fail-always" },
      );
      const model = faultyModel(
        scriptedModel((_request, call) =>
          call < 3
            ? {
                content: [
                  {
                    type: "tool_use",
                    id: `toolu_a${call}`,
                    name: "lookup_order",
                    input: { order_id: "A1001" },
                  },
                  {
                    type: "tool_use",
                    id: `toolu_b${call}`,
                    name: "refund",
                    input: { order_id: "A1" },
                  },
                ],
              }
            : answer(),
        ),
        { errors: { 1: "500", 3: "connection", 4: "timeout" }, retryAfterMs: 1 },
      );
      const agent = createAgent({
        model,
        tools: [lateReject, failing],
        retry: { baseDelayMs: 1 },
        toolRetry: { delayMs: 1 },
        exporters: [
          {
            name: "broken",
            export: async () => {
              throw new Error("exporter down");
            },
            shutdown: async () => {
              throw new Error("shutdown failed");
            },
          },
        ],
        onEvent: () => {
          throw new Error("host hook failed");
        },
        onError: () => {
          throw new Error("even onError fails");
        },
      });
      const result = await agent.run("Hi");
      expect(result.status).toBe("completed");
      await agent.shutdown();
      // A cancelled run with a model call in flight.
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 20);
      await createAgent({
        model: scriptedModel([{ content: "x", delayMs: 1_000 }]),
        tools: [],
      }).run("Hi", { signal: controller.signal });
      await new Promise((resolve) => setTimeout(resolve, 150));
      expect(seen).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });
});
