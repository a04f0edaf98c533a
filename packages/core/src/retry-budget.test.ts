import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { MessageStreamEvent, Model, ModelRequest } from "./index.js";
import { createAgent } from "./index.js";
import { memoryEventStore } from "./testing/index.js";

/**
 * A streaming model whose first `cuts` attempts report their whole usage (the prompt, and
 * `max_tokens` of output) and are then cut before `message_stop`: billed, retried. Later
 * attempts answer `answer`.
 */
function cuttingModel(cuts: number, answer = "ok"): Model {
  let calls = 0;
  return {
    name: "cutting",
    model: "claude-sonnet-5-5",
    async create() {
      throw new Error("this model only streams");
    },
    async *stream(request: ModelRequest): AsyncIterable<MessageStreamEvent> {
      calls += 1;
      const input = Math.ceil(JSON.stringify(request).length / 4);
      yield {
        type: "message_start",
        message: {
          id: `msg_${calls}`,
          type: "message",
          role: "assistant",
          model: "claude-sonnet-5-5",
          content: [],
          stop_reason: null,
          usage: { input_tokens: input, output_tokens: 1 },
        },
      } as MessageStreamEvent;
      yield {
        type: "content_block_start",
        index: 0,
        content_block: { type: "text", text: "" },
      } as MessageStreamEvent;
      yield {
        type: "content_block_delta",
        index: 0,
        delta: { type: "text_delta", text: answer },
      } as MessageStreamEvent;
      yield { type: "content_block_stop", index: 0 } as MessageStreamEvent;
      yield {
        type: "message_delta",
        delta: { stop_reason: "end_turn" },
        usage: { output_tokens: request.max_tokens },
      } as MessageStreamEvent;
      if (calls <= cuts) return;
      yield { type: "message_stop" } as MessageStreamEvent;
    },
  } as Model;
}

/** A parent that delegates to `children` child agents at once, then answers. */
function parentModel(children: number): Model {
  let step = 0;
  return {
    name: "parent",
    model: "claude-sonnet-5-5",
    async create(request: ModelRequest) {
      step += 1;
      const content =
        step === 1
          ? Array.from({ length: children }, (_, index) => ({
              type: "tool_use" as const,
              id: `toolu_${index}`,
              name: `kid_${index}`,
              input: { task: "summarise the ticket" },
            }))
          : [{ type: "text" as const, text: "done" }];
      return {
        id: `msg_p${step}`,
        type: "message",
        role: "assistant",
        model: "claude-sonnet-5-5",
        content,
        stop_reason: step === 1 ? "tool_use" : "end_turn",
        usage: { input_tokens: Math.ceil(JSON.stringify(request).length / 4), output_tokens: 20 },
      };
    },
  } as Model;
}

const retry = (maxAttempts: number) => ({ maxAttempts, baseDelayMs: 1, maxDelayMs: 2 });

describe("a step's retries stay inside the budgets", () => {
  it("a run's own maxUsd and maxTokens hold however many billed attempts fail", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.double({ min: 0.005, max: 0.2, noNaN: true }),
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 500, max: 4_000 }),
        fc.boolean(),
        async (cap, cuts, maxTokens, capTokens) => {
          const store = memoryEventStore();
          const agent = createAgent({
            model: cuttingModel(cuts),
            tools: [],
            store,
            retry: retry(cuts + 1),
            maxTokens,
            budget: capTokens ? { maxTokens: Math.round(cap * 100_000) } : { maxUsd: cap },
          });
          const result = await agent.run("Summarise the ticket.");
          expect(["completed", "stopped"]).toContain(result.status);
          if (capTokens)
            expect(result.tokens.input + result.tokens.output).toBeLessThanOrEqual(
              Math.round(cap * 100_000),
            );
          else expect(result.costUsd).toBeLessThanOrEqual(cap + 1e-12);
        },
      ),
      { numRuns: 40 },
    );
  });

  it("parallel children under one parent cap never cross it together, with billed retries", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.double({ min: 0.01, max: 0.2, noNaN: true }),
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 4 }),
        async (cap, children, cuts) => {
          const store = memoryEventStore();
          const kids = Array.from({ length: children }, (_, index) =>
            createAgent({
              agentId: `kid_${index}`,
              model: cuttingModel(cuts),
              tools: [],
              store,
              retry: retry(cuts + 1),
              maxTokens: 2_000,
            }),
          );
          const lead = createAgent({
            agentId: "lead",
            model: parentModel(children),
            store,
            retry: retry(2),
            maxTokens: 100,
            budget: { maxUsd: cap },
            tools: kids.map((kid, index) =>
              kid.asTool({ name: `kid_${index}`, description: "Summarises a ticket." }),
            ),
          });
          const result = await lead.run("Summarise the tickets.");
          expect(["completed", "stopped"]).toContain(result.status);
          expect(result.costUsd).toBeLessThanOrEqual(cap + 1e-12);
        },
      ),
      { numRuns: 30 },
    );
  });
});
