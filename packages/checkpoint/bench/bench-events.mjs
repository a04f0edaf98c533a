// What the checkpoint benches share: scratch directories removed at the end, a tool-result
// event of a chosen size, and a run log that folds (one tool call per step).
import { mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";

/** Fresh directories under `base` named `lg-<prefix>-<label>-…`; `removeAll()` deletes them. */
export function scratchDirs(base, prefix) {
  const dirs = [];
  return {
    newDir(label = "") {
      const dir = mkdtempSync(join(base, `lg-${prefix}${label ? `-${label}` : ""}-`));
      dirs.push(dir);
      return dir;
    },
    removeAll() {
      for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A successful `lookup_order` result with the given content (step 1 unless overridden). */
export function toolResult(toolUseId, content, at, step = 1) {
  return {
    type: "tool-call-result",
    step,
    toolUseId,
    tool: "lookup_order",
    status: "ok",
    content,
    isError: false,
    durationMs: 12,
    attempts: 1,
    at,
  };
}

/**
 * A run log that folds, without end: its start, then per step a model request, a response
 * calling `lookup_order` (after `responseText` when given), the call's intent and its result
 * (`resultContent`). The caller takes as many events as it needs.
 */
export function* toolRunLog(runId, { responseText, resultContent }) {
  yield {
    type: "run-start",
    runId,
    agentId: "bench",
    task: "Order A1001 arrived broken, refund please",
    model: "claude-sonnet-5-5",
    maxTokens: 1024,
    budget: {},
    policyDigest: "p",
    toolDigest: "t",
    at: 1,
  };
  for (let step = 1; ; step += 1) {
    const id = `toolu_${step}`;
    yield {
      type: "model-request",
      step,
      maxTokens: 1024,
      estimateUsd: 0.01,
      requestDigest: `d${step}`,
      at: step,
    };
    const call = { type: "tool_use", id, name: "lookup_order", input: { order_id: "A1001" } };
    yield {
      type: "model-response",
      step,
      response: {
        id: `msg_${step}`,
        type: "message",
        role: "assistant",
        model: "claude-sonnet-5-5",
        content: responseText === undefined ? [call] : [{ type: "text", text: responseText }, call],
        stop_reason: "tool_use",
        stop_sequence: null,
        usage: { input_tokens: 200, output_tokens: 30 },
      },
      costUsd: 0.0009,
      latencyMs: 700,
      attempts: 1,
      at: step,
    };
    yield {
      type: "tool-call-intent",
      step,
      toolUseId: id,
      tool: "lookup_order",
      args: { order_id: "A1001" },
      argsDigest: "a",
      idempotencyKey: `${runId}:${id}`,
      decision: { outcome: "allow", passed: ["1:validation"] },
      at: step,
    };
    yield toolResult(id, resultContent, step, step);
  }
}

/** The first `count` items of `items`. */
export function* take(items, count) {
  if (count <= 0) return;
  let taken = 0;
  for (const item of items) {
    yield item;
    taken += 1;
    if (taken >= count) return;
  }
}
