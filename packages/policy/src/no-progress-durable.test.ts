import { createAgent, tool } from "@loopguard/core";
import { memoryEventStore, scriptedModel } from "@loopguard/core/testing";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { runGuard } from "./run-guard.js";

describe("no progress through a real loop", () => {
  it("the ask parks a durable run; an approval in a new agent lets that call run; the next repeat halts", async () => {
    let executed = 0;
    const search = tool({
      name: "search_kb",
      description: "Search.",
      input: v.object({ query: v.string() }),
      run: async () => {
        executed += 1;
        return "no article found";
      },
    });
    const model = () =>
      scriptedModel((_request, call) => ({
        content: [
          {
            type: "tool_use",
            id: `toolu_${call}`,
            name: "search_kb",
            input: { query: `refund policy${" ".repeat(call)}` },
          },
        ],
      }));
    const store = memoryEventStore();
    const options = () => ({
      model: model(),
      tools: [search],
      store,
      gates: [runGuard({ noProgress: { sameResults: false } })],
      approval: { durable: true },
      budget: { maxSteps: 20 },
    });
    const parked = await createAgent(options()).run("Find the refund policy");
    expect(parked.status).toBe("awaiting_approval");
    expect(parked.blocked.map((call) => call.reason)).toEqual(["no_progress"]);
    expect(executed).toBe(3);
    const done = await createAgent(options()).approve(parked.runId, {
      decision: "approve",
      approver: "dana",
    });
    // The approved call ran (its re-check after the resume counts as the ask), and the next
    // near repeat, compared with the logged arguments of the calls before, halts the run.
    expect(executed).toBe(4);
    expect(done.status).toBe("halted");
    expect(done.haltReason).toBe("no_progress");
    const events = await store.read(parked.runId);
    expect(events.filter((event) => event.type === "approval-request")).toMatchObject([
      { reason: "no_progress_approval", tool: "search_kb" },
    ]);
    expect(events.filter((event) => event.type === "tool-call-refusal").at(-1)).toMatchObject({
      decision: {
        reason: "run_halted",
        refusedAt: "2.3:run_loop",
        details: { haltReason: "no_progress" },
      },
    });
  });
});
