import fc from "fast-check";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { foldRun } from "./fold.js";
import { createAgent, tool } from "./index.js";
import { memoryEventStore, scriptedModel } from "./testing/index.js";

const lookup = tool({
  name: "lookup_order",
  description: "Look up an order.",
  input: v.object({ order_id: v.string() }),
  run: async ({ order_id }) => `order ${order_id}: shipped`,
});

const use = (id: string) => ({
  content: [{ type: "tool_use" as const, id, name: "lookup_order", input: { order_id: "A1" } }],
});

describe("a request the process died during, sent again after resume", () => {
  it("property: every unanswered request's worst case stays spent, so crashes and resends never bill past maxUsd", async () => {
    let exercised = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.double({ min: 0.01, max: 0.2, noNaN: true }),
        async (crashes, maxUsd) => {
          const store = memoryEventStore();
          const script = () =>
            scriptedModel([use("t1"), use("t2"), use("t3"), { content: "done" }]);
          const agent = (model = script()) =>
            createAgent({ model, tools: [lookup], store, maxTokens: 256, budget: { maxUsd } });
          // A reference run gives the first request event; each "crash" leaves that request
          // unanswered in a fresh log and resumes it, which sends it again.
          const reference = memoryEventStore();
          const first = await createAgent({
            model: script(),
            tools: [lookup],
            store: reference,
            maxTokens: 256,
            budget: { maxUsd },
          }).run("Where is A1?", { runId: "run_ref" });
          const events = await reference.read(first.runId);
          const requestAt = events.findIndex((event) => event.type === "model-request");
          expect(requestAt).toBeGreaterThanOrEqual(0);
          const request = events[requestAt]!;
          const estimate = request.type === "model-request" ? request.estimateUsd : 0;
          const log = [...events.slice(0, requestAt + 1)];
          // Each earlier process sent the request again only while the cap allowed it.
          for (let crash = 1; crash < crashes && (crash + 1) * estimate <= maxUsd; crash += 1)
            log.push({ ...request, seq: log.length });
          const resent = log
            .filter((event) => event.type === "model-request")
            .map((event) => (event.type === "model-request" ? event.estimateUsd : 0));
          await store.append(
            "run_1",
            log.map((event, seq) => ({ ...event, seq })),
            {
              expectedSeq: 0,
            },
          );
          const result = await agent().resume("run_1");
          const fold = foldRun(await store.read("run_1"));
          const responses = (await store.read("run_1"))
            .filter((event) => event.type === "model-response")
            .reduce((sum, event) => sum + (event.type === "model-response" ? event.costUsd : 0), 0);
          // Each request that never got an outcome may have been billed: its worst case counts.
          const unanswered = resent.slice(0, -1).reduce((sum, usd) => sum + usd, 0);
          if (resent.length > 1) exercised += 1;
          expect(fold.committedUsd).toBeGreaterThanOrEqual(responses + unanswered - 1e-12);
          // What the API may have billed (responses and every unanswered request) stays under the cap.
          const stillOpen = fold.orphanRequest?.estimateUsd ?? 0;
          expect(responses + unanswered + stillOpen).toBeLessThanOrEqual(maxUsd + 1e-12);
          expect(["completed", "stopped"]).toContain(result.status);
        },
      ),
      { numRuns: 40 },
    );
    expect(exercised).toBeGreaterThan(10);
  });

  it("counts the superseded request's worst case in committedUsd (it was forgotten once the resend was written)", async () => {
    const reference = memoryEventStore();
    await createAgent({
      model: scriptedModel([use("t1"), { content: "done" }]),
      tools: [lookup],
      store: reference,
    }).run("Where is A1?", { runId: "run_ref" });
    const events = await reference.read("run_ref");
    const requestAt = events.findIndex((event) => event.type === "model-request");
    const request = events[requestAt]!;
    const log = [...events.slice(0, requestAt + 1), { ...request, seq: requestAt + 1 }];
    const fold = foldRun(log);
    const estimate = request.type === "model-request" ? request.estimateUsd : Number.NaN;
    expect(estimate).toBeGreaterThan(0);
    expect(fold.committedUsd).toBeCloseTo(2 * estimate, 12);
  });
});
