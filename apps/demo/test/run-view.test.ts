import type { StoredEvent } from "@loopguard/core";
import { describe, expect, it } from "vitest";
import { runView } from "../src/web/run-view.js";

// What the inbox makes of a run's log: every reason of a request, and why a request can no
// longer be answered (expired, or bound to a policy that has changed since).
let seq = 0;
const at = 1_000_000;
const event = (body: Record<string, unknown>, offset = 0) =>
  ({ ...body, seq: seq++, at: at + offset }) as unknown as StoredEvent;

function parkedRun(request: Record<string, unknown>) {
  seq = 0;
  return [
    event({
      type: "run-start",
      runId: "run_a",
      agentId: "desk",
      task: "Refund A1 for jane@acme.io",
      model: "m",
      maxTokens: 100,
      budget: {},
      policyDigest: "p1",
      toolDigest: "t",
    }),
    event(
      {
        type: "model-response",
        step: 1,
        response: {
          content: [
            {
              type: "tool_use",
              id: "tu_1",
              name: "issue_refund",
              input: { order_id: "A1", amount: 900 },
            },
          ],
          usage: { input_tokens: 1, output_tokens: 1 },
        },
        costUsd: 0.01,
        latencyMs: 1,
        attempts: 1,
      },
      1,
    ),
    event(
      {
        type: "approval-request",
        step: 1,
        requestId: "apr_1",
        toolUseId: "tu_1",
        tool: "issue_refund",
        argsDigest: "d",
        policyDigest: "p1",
        reason: "policy_ask",
        message: "over 500",
        expiresAt: at + 60_000,
        ...request,
      },
      2,
    ),
  ];
}

describe("runView", () => {
  it("lists every reason of a request with the gate that asked, and redacts what it shows", () => {
    const view = runView(
      "run_a",
      parkedRun({
        reasons: [
          { reason: "policy_ask", message: "over 500", gate: "policy" },
          { reason: "taint_ask", message: "came from a flagged page", gate: "taint" },
        ],
      }),
      {
        now: at + 10,
        policyDigest: "p1",
        redact: (value) =>
          typeof value === "string" ? value.replace(/jane@acme\.io/g, "[EMAIL]") : value,
      },
    );
    expect(view.status).toBe("awaiting_approval");
    expect(view.task).toBe("Refund A1 for [EMAIL]");
    expect(view.pending).toHaveLength(1);
    expect(view.pending[0]).toMatchObject({
      state: "pending",
      tool: "issue_refund",
      args: { order_id: "A1", amount: 900 },
    });
    expect(view.pending[0]!.reasons).toEqual([
      { reason: "policy_ask", message: "over 500", gate: "policy" },
      { reason: "taint_ask", message: "came from a flagged page", gate: "taint" },
    ]);
  });

  it("says why an expired or stale request can no longer be approved", () => {
    const expired = runView("run_a", parkedRun({}), { now: at + 120_000, policyDigest: "p1" });
    expect(expired.pending[0]!.state).toBe("expired");
    expect(expired.pending[0]!.why).toMatch(/expired/);
    const stale = runView("run_a", parkedRun({}), { now: at + 10, policyDigest: "p2" });
    expect(stale.pending[0]!.state).toBe("stale");
    expect(stale.pending[0]!.why).toMatch(/policy changed/);
    const old = runView("run_a", parkedRun({}), { now: at + 10, policyDigest: "p1" });
    expect(old.pending[0]!.reasons).toEqual([{ reason: "policy_ask", message: "over 500" }]);
  });

  it("clears a request once it is answered, and the run is running again", () => {
    const events = [
      ...parkedRun({}),
      event(
        {
          type: "approval-decision",
          requestId: "apr_1",
          toolUseId: "tu_1",
          decision: "approve",
          approver: "dana",
        },
        3,
      ),
    ];
    const view = runView("run_a", events, { now: at + 10 });
    expect(view.pending).toEqual([]);
    expect(view.status).toBe("running");
    expect(view.answered).toEqual([
      {
        requestId: "apr_1",
        tool: "issue_refund",
        decision: "approve",
        approver: "dana",
        at: at + 3,
      },
    ]);
  });
});
