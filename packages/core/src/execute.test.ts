import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { executeTool } from "./execute.js";
import { cloneJson } from "./json.js";
import { type ToolContext, tool } from "./tool.js";

const context = {
  idempotencyKey: "run_1:toolu_1",
  runId: "run_1",
  agentId: "a",
  toolUseId: "toolu_1",
};

/** A tool that hands its context to the test and then waits for `release`. */
function capturingTool(options: { timeoutMs?: number; readAfterMs?: number } = {}) {
  const seen: { context?: ToolContext; signalAtRead?: AbortSignal } = {};
  const item = tool({
    name: "capture",
    description: "Captures its context.",
    input: v.object({}),
    ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
    run: async (_args, toolContext) => {
      seen.context = toolContext;
      if (options.readAfterMs === undefined) return "done";
      await new Promise((resolve) => setTimeout(resolve, options.readAfterMs));
      seen.signalAtRead = toolContext.signal;
      return "late";
    },
  });
  return { item, seen };
}

describe("executeTool and the call's signal", () => {
  it("gives a tool that reads its signal a live one, and a result", async () => {
    const { item, seen } = capturingTool();
    const run = new AbortController();
    const result = await executeTool(item, {}, context, { signal: run.signal });
    expect(result).toMatchObject({ status: "ok", value: "done", attempts: 1 });
    expect(seen.context?.signal.aborted).toBe(false);
    expect(seen.context?.attempt).toBe(1);
    expect(seen.context?.idempotencyKey).toBe("run_1:toolu_1");
  });

  it("a signal first read after the deadline is already aborted, with the timeout as reason", async () => {
    const { item, seen } = capturingTool({ timeoutMs: 20, readAfterMs: 60 });
    const result = await executeTool(item, {}, context, { signal: new AbortController().signal });
    expect(result).toMatchObject({ status: "error", errorKind: "timeout" });
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(seen.signalAtRead?.aborted).toBe(true);
    expect(String((seen.signalAtRead?.reason as Error | undefined)?.message)).toMatch(
      /timed out after 20 ms/,
    );
  });

  it("a signal read before the deadline aborts at the deadline", async () => {
    let signal: AbortSignal | undefined;
    const item = tool({
      name: "hang",
      description: "Hangs until aborted.",
      input: v.object({}),
      timeoutMs: 20,
      run: (_args, toolContext) =>
        new Promise((_resolve, reject) => {
          signal = toolContext.signal;
          signal.addEventListener("abort", () => reject(signal!.reason), { once: true });
        }),
    });
    const result = await executeTool(item, {}, context, { signal: new AbortController().signal });
    expect(result).toMatchObject({ status: "error", errorKind: "timeout" });
    expect(signal?.aborted).toBe(true);
  });

  it("cancelling the run aborts every call in flight with the run's reason, once", async () => {
    const run = new AbortController();
    const signals: AbortSignal[] = [];
    const item = tool({
      name: "wait",
      description: "Waits until aborted.",
      input: v.object({}),
      run: (_args, toolContext) =>
        new Promise((resolve) => {
          signals.push(toolContext.signal);
          toolContext.signal.addEventListener("abort", () => resolve("stopped"), { once: true });
        }),
    });
    const calls = [1, 2, 3].map(() => executeTool(item, {}, context, { signal: run.signal }));
    await new Promise((resolve) => setTimeout(resolve, 5));
    const reason = new Error("cancelled by the host");
    run.abort(reason);
    const results = await Promise.all(calls);
    for (const result of results)
      expect(result).toMatchObject({ status: "error", errorKind: "aborted" });
    expect(signals.map((signal) => signal.reason)).toEqual([reason, reason, reason]);
    // A call started after the run ended is not run at all.
    expect(await executeTool(item, {}, context, { signal: run.signal })).toMatchObject({
      status: "error",
      errorKind: "aborted",
      attempts: 0,
    });
  });
});

describe("cloneJson", () => {
  it("copies like structuredClone, sharing nothing mutable", () => {
    const value = {
      a: [1, "x", { b: null, c: undefined, d: new Date(5), e: [[]] }],
      f: true,
      g: { h: 1.5 },
    };
    const copy = cloneJson(value);
    expect(copy).toStrictEqual(structuredClone(value));
    expect(copy.a).not.toBe(value.a);
    expect(copy.a[2]).not.toBe(value.a[2]);
    expect(copy.g).not.toBe(value.g);
  });

  it("handles deep nesting and cycles as structuredClone does, and refuses functions", () => {
    const root: Record<string, unknown> = {};
    let cursor = root;
    for (let depth = 0; depth < 500; depth += 1) {
      const next = {};
      cursor.x = next;
      cursor = next;
    }
    expect(cloneJson(root)).toStrictEqual(structuredClone(root));
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    const copy = cloneJson(cyclic);
    expect(copy.self).toBe(copy);
    expect(() => cloneJson({ f: () => 1 })).toThrow();
  });
});
