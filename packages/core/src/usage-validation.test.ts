import fc from "fast-check";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { createAgent, tool } from "./index.js";
import { usageProblem } from "./model-step.js";
import { memoryEventStore, type ScriptedReply, scriptedModel } from "./testing/index.js";

// A model (or an adapter, or a proxy) that reports usage nobody can count must never lower the
// run's spend: the reply is malformed (retried, then the run fails) and no tool call it asked
// for runs.

const badCounts = fc.oneof(
  fc.integer({ min: -2_000_000_000, max: -1 }),
  fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -1e9, 0.5, 1e300),
  fc.double({ noInteger: true, noNaN: true }).filter((value) => Number.isFinite(value)),
  fc.constantFrom("12", null, {}, true),
);
const fields = fc.constantFrom(
  "input_tokens",
  "output_tokens",
  "cache_creation_input_tokens",
  "cache_read_input_tokens",
);

describe("usage from a model is validated, never trusted as spend", () => {
  it("usageProblem accepts whole non-negative counts and names the field of anything else", () => {
    fc.assert(
      fc.property(fc.nat(), fc.nat(), fc.nat(), fc.nat(), (input, output, write, read) => {
        expect(
          usageProblem({
            input_tokens: input,
            output_tokens: output,
            cache_creation_input_tokens: write,
            cache_read_input_tokens: read,
          }),
        ).toBeUndefined();
      }),
    );
    fc.assert(
      fc.property(fields, badCounts, (field, bad) => {
        const usage: Record<string, unknown> = { input_tokens: 10, output_tokens: 5 };
        usage[field] = bad;
        const problem = usageProblem(usage);
        // null is "not reported" for the optional cache fields, which is fine.
        if (bad === null && field.startsWith("cache")) expect(problem).toBeUndefined();
        else expect(problem).toContain(`usage.${field}`);
      }),
    );
    expect(usageProblem({ output_tokens: 1 })).toMatch(/input_tokens is missing/);
    expect(
      usageProblem({
        input_tokens: 1,
        output_tokens: 1,
        cache_creation: { ephemeral_1h_input_tokens: -5 },
      }),
    ).toMatch(/ephemeral_1h_input_tokens/);
  });

  it("a run whose model reports bad usage fails as malformed after its retries, runs no paid tool, and spends nothing negative", async () => {
    await fc.assert(
      fc.asyncProperty(fields, badCounts, fc.boolean(), async (field, bad, stream) => {
        let paid = 0;
        const refund = tool({
          name: "issue_refund",
          description: "Refund an order.",
          input: v.object({ order_id: v.string(), amount: v.number() }),
          costUsd: 0.4,
          run: async () => {
            paid += 1;
            return { ok: true };
          },
        });
        const reply = (): ScriptedReply => ({
          content: [
            {
              type: "tool_use",
              id: `toolu_${Math.random().toString(36).slice(2)}`,
              name: "issue_refund",
              input: { order_id: "A1", amount: 400 },
            },
          ],
          usage: { input_tokens: 100, output_tokens: 10, [field]: bad } as never,
        });
        const model = scriptedModel(() => reply(), stream ? {} : { noStream: true });
        const store = memoryEventStore();
        const agent = createAgent({
          model,
          tools: [refund],
          store,
          budget: { maxUsd: 2, maxSteps: 40 },
          retry: { maxAttempts: 2, baseDelayMs: 1 },
        });
        const result = await agent.run("refund everything");
        if (bad === null && field.startsWith("cache")) return; // a missing optional count is fine
        // The scripted model clamps an output count above max_tokens into a max_tokens stop (as
        // the API would); every other bad count is a malformed reply that fails the run.
        if (result.why === "max_tokens") expect(result.status).toBe("stopped");
        else {
          expect(result.status).toBe("failed");
          expect(result.error ?? "").toMatch(/malformed|usage/i);
        }
        expect(paid).toBe(0);
        expect(result.costUsd).toBeGreaterThanOrEqual(0);
        expect(Number.isFinite(result.costUsd)).toBe(true);
        for (const request of model.requests)
          expect(Number.isSafeInteger(request.max_tokens)).toBe(true);
        const events = await store.read(result.runId);
        for (const event of events)
          if (event.type === "model-response")
            expect(usageProblem(event.response.usage as never)).toBeUndefined();
      }),
      { numRuns: 40 },
    );
  });
});
