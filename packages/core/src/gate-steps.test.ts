import fc from "fast-check";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import type { Gate, GateStep } from "./index.js";
import { createAgent, guardTool, tool } from "./index.js";
import { sortGates, stepOrder } from "./pipeline.js";
import { memoryEventStore, scriptedModel } from "./testing/index.js";

const wire = tool({
  name: "wire_money",
  description: "Wire money.",
  input: v.object({ amount: v.number() }),
  run: async () => "sent",
});

const denyWire: Gate = {
  name: "policy",
  step: "2",
  check: (call) =>
    call.tool === "wire_money"
      ? { type: "deny", reason: "policy_deny", message: "No wires." }
      : { type: "allow" },
};

function gateAt(step: string): Gate {
  return { name: "custom", step: step as GateStep, check: () => ({ type: "allow" }) };
}

/** Step strings an author (or an attacker writing a plugin's options) could pass that are not steps. */
const unknownStep = fc
  .oneof(
    fc.string({ maxLength: 6 }),
    fc.constantFrom("2.9", "2.50", "8", "", "0.70", " 2", "2 ", "02", "2.0", "1e0", "-1"),
    fc.constantFrom(...stepOrder).map((step) => `${step}0`),
  )
  .filter((step) => !(stepOrder as readonly string[]).includes(step));

describe("gate steps", () => {
  it("property: a gate at a step the pipeline does not have is refused by createAgent, guardTool and sortGates", () => {
    fc.assert(
      fc.property(unknownStep, fc.integer({ min: 0, max: 3 }), (step, position) => {
        const gates = [denyWire, denyWire, denyWire];
        gates.splice(position, 0, gateAt(step));
        expect(() =>
          createAgent({
            model: scriptedModel([]),
            tools: [wire],
            gates,
            store: memoryEventStore(),
          }),
        ).toThrow(/\[core\].*not a pipeline step: use one of "0", "0\.7"/);
        expect(() => guardTool(wire, { gates })).toThrow(/\[core\].*not a pipeline step/);
        expect(() => sortGates(gates)).toThrow(/not a pipeline step/);
      }),
    );
  });

  it("every declared step is accepted, and gates are judged in step order", async () => {
    const seen: string[] = [];
    const gates: Gate[] = [...stepOrder].reverse().map((step) => ({
      name: `at-${step}`,
      step,
      check: () => {
        seen.push(step);
        return { type: "allow" };
      },
    }));
    const result = await guardTool(wire, { gates })({ amount: 1 });
    expect(result, JSON.stringify(result)).toMatchObject({ type: "ok" });
    // Judged in step order whatever order they were declared in; every step up to the call's own
    // (5) is judged before the tool runs (the later steps belong to the call's result).
    expect(seen).toEqual(stepOrder.filter((step) => seen.includes(step)));
    expect(seen.slice(0, stepOrder.indexOf("5") + 1)).toEqual(
      stepOrder.slice(0, stepOrder.indexOf("5") + 1),
    );
  });

  it("a deny gate is never skipped because another gate was declared at a bad step (it was before: the run wired the money)", async () => {
    const store = memoryEventStore();
    const build = () =>
      createAgent({
        model: scriptedModel([
          {
            content: [
              { type: "tool_use", id: "toolu_1", name: "wire_money", input: { amount: 5 } },
            ],
          },
          { content: [{ type: "text", text: "done" }] },
        ]),
        tools: [wire],
        gates: [gateAt("2.9"), denyWire],
        store,
      });
    expect(build).toThrow(/gates\[0\] \("custom"\) has step "2\.9"/);
    const result = await createAgent({
      model: scriptedModel([
        {
          content: [{ type: "tool_use", id: "toolu_1", name: "wire_money", input: { amount: 5 } }],
        },
        { content: [{ type: "text", text: "done" }] },
      ]),
      tools: [wire],
      gates: [denyWire],
      store,
    }).run("Wire five.");
    const events = await store.read(result.runId);
    expect(events.some((event) => event.type === "tool-call-refusal")).toBe(true);
    expect(events.some((event) => event.type === "tool-call-result")).toBe(false);
  });
});
