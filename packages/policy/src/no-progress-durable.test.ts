import { createAgent, tool } from "@loopguard/core";
import { memoryEventStore, scriptedModel } from "@loopguard/core/testing";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { runGuard } from "./run-guard.js";

describe("no progress through a real loop", () => {
  it("the ask parks a durable run; an approval in a new agent lets that call run; after the resume the next detection asks again", async () => {
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
    // The approved call ran. The approval is not in what a resumed run's gates can read, so
    // the next detection asks a person again (fail safe: never fewer checks than before).
    expect(executed).toBeGreaterThanOrEqual(4);
    expect(done.status).toBe("awaiting_approval");
    const events = await store.read(parked.runId);
    const requests = events.filter((event) => event.type === "approval-request");
    expect(requests).toMatchObject([
      { reason: "no_progress_approval", tool: "search_kb" },
      { reason: "no_progress_approval", tool: "search_kb" },
    ]);
    expect(
      events.some((event) => event.type === "tool-call-intent" && event.toolUseId === "toolu_5"),
    ).toBe(true);
  });
});
