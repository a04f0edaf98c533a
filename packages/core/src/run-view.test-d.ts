import { describe, expectTypeOf, it } from "vitest";
import type { Gate, GateMemoryKey, RunView, ToolCall } from "./index.js";
import { gateMemory, type RunState } from "./plugin/index.js";

// Type tests (vitest typecheck): a gate reads the run through a read-only view. Every
// `@ts-expect-error` below is a write a gate must not be able to make; if one compiles, the
// directive itself is the error and this file fails.

describe("ToolCall.run", () => {
  it("is a RunView or undefined, never the mutable RunState", () => {
    expectTypeOf<ToolCall["run"]>().toEqualTypeOf<RunView | undefined>();
    expectTypeOf<NonNullable<ToolCall["run"]>>().not.toEqualTypeOf<RunState>();
    // A RunState can be handed to gates as a view (core does), not the other way round.
    expectTypeOf<RunState>().toExtend<RunView>();
    expectTypeOf<RunView>().not.toExtend<RunState>();
  });

  it("has no scratch map and none of the run state's writers", () => {
    expectTypeOf<RunView>().not.toHaveProperty("scratch");
    expectTypeOf<RunView>().not.toHaveProperty("restoreHalt");
    expectTypeOf<RunView>().not.toHaveProperty("onHalt");
  });
});

const gate: Gate = {
  name: "writer",
  step: "2",
  check(call) {
    const run = call.run;
    // @ts-expect-error the call's run cannot be swapped
    call.run = undefined;
    if (!run) return { type: "allow" };
    // @ts-expect-error identity is read-only
    run.runId = "run_other";
    // @ts-expect-error identity is read-only
    run.agentId = "agent_other";
    // @ts-expect-error roles cannot be replaced
    run.roles = ["admin"];
    // @ts-expect-error nor grown
    run.roles.push("admin");
    // @ts-expect-error attributes cannot be written
    run.attributes.tenant = "other";
    // @ts-expect-error the task is read-only
    run.task = "something else";
    // @ts-expect-error the halt latch is a getter: only halt() closes it
    run.halted = false;
    // @ts-expect-error
    run.haltReason = undefined;
    // @ts-expect-error admitted calls cannot be appended to
    run.calls.push({ tool: "t", argsDigest: "d", toolUseId: "u" });
    // @ts-expect-error nor removed
    run.calls.length = 0;
    const first = run.calls[0];
    // @ts-expect-error nor rewritten
    if (first) first.tool = "other";
    // @ts-expect-error refusals cannot be erased
    run.refusals.splice(0);
    const refusal = run.refusals[0];
    // @ts-expect-error nor their reason rewritten
    if (refusal) refusal.reason = "allowed";
    // @ts-expect-error outputs cannot be appended to
    run.outputs.push({ tool: "t", toolUseId: "u", text: "" });
    const output = run.outputs[0];
    // @ts-expect-error nor their text rewritten
    if (output) output.text = "clean";
    // @ts-expect-error spend cannot be rolled back
    run.spend.usd = 0;
    // @ts-expect-error
    run.spend.steps -= 1;
    // @ts-expect-error memory is only reached through a key
    run.memory = () => undefined;
    // Reading is fine, and so is the latch (it only closes).
    expectTypeOf(run.calls.length).toBeNumber();
    expectTypeOf(run.spend.usd).toBeNumber();
    expectTypeOf(run.halt).toEqualTypeOf<(reason: string, source?: string) => void>();
    return { type: "allow" };
  },
};
void gate;

describe("gateMemory", () => {
  it("types the memory by its key", () => {
    const seen = gateMemory("test.seen", () => new Set<string>());
    expectTypeOf(seen).toEqualTypeOf<GateMemoryKey<Set<string>>>();
    const counts = gateMemory("test.counts", (run) => ({ at: run.calls.length }));
    expectTypeOf(counts).toEqualTypeOf<GateMemoryKey<{ at: number }>>();
    const check = (call: ToolCall) => {
      const memory = call.run?.memory(seen);
      expectTypeOf(memory).toEqualTypeOf<Set<string> | undefined>();
      expectTypeOf(call.run!.memory(counts).at).toBeNumber();
    };
    void check;
  });

  it("gives the init the view, not the state", () => {
    gateMemory("test.init", (run) => {
      expectTypeOf(run).toEqualTypeOf<RunView>();
      // @ts-expect-error the init reads the run, it cannot write it
      run.calls.push({ tool: "t", argsDigest: "d", toolUseId: "u" });
      return 0;
    });
  });
});
