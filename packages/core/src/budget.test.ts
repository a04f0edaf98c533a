import fc from "fast-check";
import * as v from "valibot";
import { afterEach, describe, expect, it } from "vitest";
import { claudeModel } from "./anthropic/index.js";
import type { EventStore } from "./contracts/event-store.js";
import type { ModelRequest } from "./contracts/model.js";
import { createAgent, type ModelPrice, tool, UnknownModelPriceError } from "./index.js";
import { requestBytes } from "./pricing.js";
import {
  type MessagesApiServer,
  memoryEventStore,
  messagesApiServer,
  type ScriptedReply,
  scriptedModel,
} from "./testing/index.js";

const echo = tool({
  name: "fetch_page",
  description: "Fetch a page of the order history.",
  input: v.object({ page: v.number() }),
  run: async ({ page }) => `page ${page}: ${"order line; ".repeat(40)}`,
});

/** A model that never stops calling tools, with realistic usage (prompt tokens never above the request's bytes). */
function runawayModel(options: { model?: string; outputTokens?: number } = {}) {
  const output = options.outputTokens ?? 300;
  return scriptedModel(
    (request: ModelRequest, call: number): ScriptedReply => ({
      content: [
        { type: "text", text: `Checking page ${call} of the history.` },
        { type: "tool_use", id: `toolu_${call}`, name: "fetch_page", input: { page: call } },
      ],
      usage: {
        input_tokens: Math.floor(requestBytes(request) / 4),
        output_tokens: Math.min(output, request.max_tokens),
      },
    }),
    { model: options.model ?? "claude-opus-5-5" },
  );
}

let server: MessagesApiServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("budgets", () => {
  it("property: spend never exceeds maxUsd, steps never exceed maxSteps, and a cap that bites stops the run with its limit", async () => {
    const priceArb = fc.record({
      inputPerMTok: fc.double({ min: 0.05, max: 20, noNaN: true }),
      outputPerMTok: fc.double({ min: 0.1, max: 100, noNaN: true }),
      cacheWrite5mPerMTok: fc.double({ min: 0.05, max: 30, noNaN: true }),
      cacheWrite1hPerMTok: fc.double({ min: 0.05, max: 40, noNaN: true }),
      cacheReadPerMTok: fc.double({ min: 0, max: 5, noNaN: true }),
    });
    const stepArb = fc.record({
      toolCalls: fc.integer({ min: 0, max: 3 }),
      text: fc.string({ maxLength: 200 }),
      outputFraction: fc.double({ min: 0, max: 1, noNaN: true }),
      promptFraction: fc.double({ min: 0, max: 0.9, noNaN: true }),
      cacheRead: fc.double({ min: 0, max: 1, noNaN: true }),
      cacheWrite: fc.double({ min: 0, max: 1, noNaN: true }),
      toolOutputBytes: fc.integer({ min: 0, max: 3_000 }),
    });
    await fc.assert(
      fc.asyncProperty(
        priceArb,
        fc.array(stepArb, { minLength: 1, maxLength: 14 }),
        fc.double({ min: 0.0002, max: 0.3, noNaN: true }),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 16, max: 8_192 }),
        async (price: ModelPrice, script, maxUsd, maxSteps, maxTokens) => {
          // The script's last step answers; every other step calls tools (or just talks, when it calls none).
          let known: { tokens: number; bytes: number } | undefined;
          let outputBytes = 0;
          const model = scriptedModel(
            (request, call) => {
              const step = script[Math.min(call, script.length) - 1]!;
              const last = call >= script.length;
              const content: ScriptedReply["content"] = [
                { type: "text", text: step.text },
                ...Array.from({ length: last ? 0 : Math.max(1, step.toolCalls) }, (_, index) => ({
                  type: "tool_use" as const,
                  id: `toolu_${call}_${index}`,
                  name: "fetch_page",
                  input: { page: step.toolOutputBytes + index },
                })),
              ];
              // Prompt tokens as a real tokenizer gives them: the known prefix again, plus at most one token per new byte.
              const bytes = requestBytes(request);
              const fresh = Math.max(0, bytes - (known?.bytes ?? 0) - outputBytes);
              const prompt = (known?.tokens ?? 0) + Math.floor(fresh * step.promptFraction);
              const output = Math.max(1, Math.floor(step.outputFraction * request.max_tokens));
              const cacheRead = Math.floor(prompt * step.cacheRead);
              const cacheWrite = Math.floor((prompt - cacheRead) * step.cacheWrite);
              known = { tokens: prompt + output, bytes };
              outputBytes = Buffer.byteLength(JSON.stringify(content));
              return {
                content,
                ...(last ? { stop_reason: "end_turn" as const } : {}),
                usage: {
                  input_tokens: prompt - cacheRead - cacheWrite,
                  output_tokens: output,
                  cache_read_input_tokens: cacheRead,
                  cache_creation_input_tokens: cacheWrite,
                },
              };
            },
            { model: "acme-custom-model" },
          );
          const store = memoryEventStore();
          const agent = createAgent({
            model,
            tools: [echo],
            store,
            maxTokens,
            prices: { "acme-custom-model": price },
            budget: { maxUsd, maxSteps },
          });
          const result = await agent.run("Summarise my order history.");
          const events = await store.read(result.runId);

          expect(result.costUsd).toBeLessThanOrEqual(maxUsd + 1e-12);
          expect(result.steps).toBeLessThanOrEqual(maxSteps);
          expect(["completed", "stopped"]).toContain(result.status);
          // Before every call, what was spent plus the call's worst case fits under the cap.
          let spent = 0;
          for (const event of events) {
            if (event.type === "model-request") {
              expect(spent + event.estimateUsd).toBeLessThanOrEqual(maxUsd + 1e-12);
              expect(event.maxTokens).toBeLessThanOrEqual(maxTokens);
              expect(event.maxTokens).toBeGreaterThanOrEqual(1);
            }
            if (event.type === "model-response") spent += event.costUsd;
          }
          expect(spent).toBeCloseTo(result.costUsd, 12);
          for (const [index, request] of model.requests.entries()) {
            const event = events.filter((item) => item.type === "model-request")[index];
            expect(request.max_tokens).toBe(
              event?.type === "model-request" ? event.maxTokens : Number.NaN,
            );
          }
          if (result.status === "completed") {
            expect(result.steps).toBe(script.length);
          } else {
            expect(result.why).toBe("budget");
            expect(["maxUsd", "maxSteps"]).toContain(result.limit);
            expect(result.steps).toBeLessThan(script.length);
            if (result.limit === "maxSteps") expect(result.steps).toBe(maxSteps);
          }
        },
      ),
      { numRuns: 150 },
    );
    // 150 whole runs: seconds on a quiet machine, far more on a loaded CI box.
  }, 180_000);

  it("stops a model that keeps calling tools before a $0.10 cap, with a partial answer", async () => {
    const model = runawayModel();
    const store = memoryEventStore();
    const result = await createAgent({
      model,
      tools: [echo],
      store,
      maxTokens: 4_096,
      budget: { maxUsd: 0.1 },
    }).run("Summarise my order history.");
    expect(result).toMatchObject({ status: "stopped", why: "budget", limit: "maxUsd" });
    expect(result.costUsd).toBeLessThanOrEqual(0.1);
    expect(result.costUsd).toBeGreaterThan(0.05);
    expect(result.answer).toBe(`Checking page ${result.steps} of the history.`);
    expect(model.calls).toBe(result.steps);
    expect((await store.read(result.runId)).at(-1)).toMatchObject({
      type: "run-end",
      status: "stopped",
      limit: "maxUsd",
    });
  });

  it("refuses at createAgent a model with no known price", () => {
    const model = scriptedModel([{ content: "hi" }], { model: "acme-mystery-model" });
    expect(() => createAgent({ model, tools: [] })).toThrow(UnknownModelPriceError);
    expect(() => createAgent({ model, tools: [] })).toThrow(
      /\[core\] no price is known for model "acme-mystery-model".*createAgent\(\{ prices:/,
    );
    const price = {
      inputPerMTok: 1,
      outputPerMTok: 5,
      cacheWrite5mPerMTok: 1.25,
      cacheWrite1hPerMTok: 2,
      cacheReadPerMTok: 0.1,
    };
    expect(() =>
      createAgent({ model, tools: [], prices: { "acme-mystery-model": price } }),
    ).not.toThrow();
  });

  it("lowers max_tokens in the request the Claude API receives to stay under the cap", async () => {
    server = await messagesApiServer({
      replies: [
        {
          type: "message",
          message: { content: "Done.", usage: { input_tokens: 20, output_tokens: 10 } },
        },
      ],
    });
    const store = memoryEventStore();
    const agent = createAgent({
      model: claudeModel({ baseURL: server.url, apiKey: "sk-ant-test-fake", maxTokens: 4_096 }),
      tools: [echo],
      store,
      budget: { maxUsd: 0.05 },
    });
    const result = await agent.run("Hi");
    expect(result.status).toBe("completed");
    const sent = server.requests[0]!.body.max_tokens as number;
    const request = (await store.read(result.runId)).find(
      (event) => event.type === "model-request",
    );
    if (request?.type !== "model-request") throw new Error("no model-request event");
    // Opus 5.5 output is $20/MTok: 4096 tokens would cost $0.082, over the $0.05 cap.
    expect(sent).toBe(request.maxTokens);
    expect(sent).toBeLessThan(4_096);
    expect(sent).toBeGreaterThan(2_000);
    expect(request.estimateUsd).toBeLessThanOrEqual(0.05);
    // One more output token would not have fitted.
    expect(request.estimateUsd + 20 / 1_000_000).toBeGreaterThan(0.05);
  });

  it("spend carries over a crash and resume: the resumed run counts from where it was and stays under the cap", async () => {
    const cap = 0.1;
    // How far a run gets without a crash.
    const uncrashed = runawayModel();
    const baseline = await createAgent({
      model: uncrashed,
      tools: [echo],
      maxTokens: 4_096,
      budget: { maxUsd: cap },
    }).run("Summarise my order history.");
    expect(baseline.limit).toBe("maxUsd");

    const inner = memoryEventStore();
    const first = runawayModel();
    const crashed = await createAgent({
      model: first,
      tools: [echo],
      store: crashAfter(inner, 7),
      maxTokens: 4_096,
      budget: { maxUsd: cap },
    }).run("Summarise my order history.");
    expect(crashed.status).toBe("failed");
    expect(crashed.error).toMatch(
      /the event store failed, so the run stopped before acting: disk full/,
    );
    const logged = await inner.read(crashed.runId);
    const spentBefore = logged.reduce(
      (sum, event) => sum + (event.type === "model-response" ? event.costUsd : 0),
      0,
    );
    expect(spentBefore).toBeGreaterThan(0);

    const second = runawayModel();
    const resumed = await createAgent({
      model: second,
      tools: [echo],
      store: inner,
      maxTokens: 4_096,
      budget: { maxUsd: cap },
    }).resume(crashed.runId);
    expect(resumed).toMatchObject({ status: "stopped", limit: "maxUsd" });
    expect(resumed.costUsd).toBeLessThanOrEqual(cap);
    expect(resumed.costUsd).toBeGreaterThanOrEqual(spentBefore);
    // The resumed process made only the calls the budget had left, not a fresh budget's worth.
    expect(second.calls).toBeLessThan(baseline.steps);
    expect(first.calls + second.calls).toBeLessThanOrEqual(baseline.steps + 1);
    expect(resumed.steps).toBe(
      (await inner.read(crashed.runId)).filter((event) => event.type === "model-response").length,
    );
  });

  it("a run stopped by maxSteps stays stopped when resumed", async () => {
    const model = runawayModel();
    const store = memoryEventStore();
    const stopped = await createAgent({ model, tools: [echo], store, budget: { maxSteps: 2 } }).run(
      "Hi",
    );
    expect(stopped).toMatchObject({ status: "stopped", limit: "maxSteps", steps: 2 });
    const again = runawayModel();
    const resumed = await createAgent({
      model: again,
      tools: [echo],
      store,
      budget: { maxSteps: 2 },
    }).resume(stopped.runId);
    expect(resumed).toMatchObject({
      status: "stopped",
      limit: "maxSteps",
      steps: 2,
      costUsd: stopped.costUsd,
    });
    expect(again.calls).toBe(0);
  });
});

/** A store that works for `appends` appends and then fails like a full disk (the process "crashes"). */
function crashAfter(inner: EventStore, appends: number): EventStore {
  let count = 0;
  return {
    name: "crashing",
    async append(runId, events, options) {
      count += 1;
      if (count > appends) throw new Error("disk full");
      return inner.append(runId, events, options);
    },
    read: (runId) => inner.read(runId),
    list: (filter) => inner.list(filter),
  };
}
