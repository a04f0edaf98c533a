import * as v from "valibot";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Gate } from "./contracts/gate.js";
import { foldRun, guardRunModel } from "./fold.js";
import { guardTool, stopRun, withRun } from "./guard.js";
import { approveRun } from "./guard-run.js";
import { memoryEventStore } from "./memory-event-store.js";
import { spansFromEvents } from "./spans.js";
import { tool } from "./tool.js";

const refunds: string[] = [];
const refund = tool({
  name: "issue_refund",
  description: "Refund an order.",
  input: v.object({ order_id: v.string(), amount: v.number() }),
  run: async (args, context) => {
    refunds.push(`${args.order_id}:${args.amount}:${context.idempotencyKey}`);
    return `refunded ${args.amount}`;
  },
});
beforeEach(() => {
  refunds.length = 0;
});

/** Asks about refunds over 100; denies order "X". */
const refundRules: Gate = {
  name: "refund_rules",
  step: "2",
  check: (call) => {
    if (call.args.order_id === "X")
      return {
        type: "deny",
        reason: "blocked_order",
        message: "Order X is blocked.",
        fixHints: ["Ask a person."],
      };
    return (call.args.amount as number) > 100
      ? { type: "ask", reason: "large_refund", message: "Refunds over 100 need a person." }
      : { type: "allow" };
  },
};

describe("withRun with a store: the guard path records a run", () => {
  it("appends the loop's events, folds to the same run state, and traces invoke_agent with execute_tool children", async () => {
    const store = memoryEventStore();
    const seen: string[] = [];
    const guarded = guardTool(refund, { gates: [refundRules] });
    const runId = await withRun(
      { agentId: "desk", runId: "run_g1", store, onEvent: (event) => seen.push(event.type) },
      async (run) => {
        expect(await guarded({ order_id: "A1", amount: 20 }, { toolUseId: "tu_1" })).toMatchObject({
          type: "ok",
        });
        expect(await guarded({ order_id: "X", amount: 5 }, { toolUseId: "tu_2" })).toMatchObject({
          type: "refused",
          reason: "blocked_order",
        });
        expect(run.calls.map((call) => call.toolUseId)).toEqual(["tu_1"]);
        return run.runId;
      },
    );
    const events = await store.read(runId);
    expect(events.map((event) => event.type)).toEqual([
      "run-start",
      "tool-call-intent",
      "tool-call-result",
      "tool-call-refusal",
      "run-end",
    ]);
    expect(seen).toEqual(events.map((event) => event.type));
    expect(events[0]).toMatchObject({ model: guardRunModel, agentId: "desk" });
    expect(events[1]).toMatchObject({
      idempotencyKey: "run_g1:tu_1",
      args: { order_id: "A1", amount: 20 },
    });
    expect(refunds).toEqual(["A1:20:run_g1:tu_1"]);
    const fold = foldRun(events);
    expect(fold.status).toBe("completed");
    expect(fold.state.refusals.map((refusal) => refusal.reason)).toEqual(["blocked_order"]);
    const spans = spansFromEvents(events);
    const root = spans.find((span) => span.name === "invoke_agent desk")!;
    const tools = spans.filter((span) => span.name === "execute_tool issue_refund");
    expect(tools).toHaveLength(2);
    for (const span of tools) expect(span.parentSpanId).toBe(root.spanId);
    expect(spans.some((span) => span.name.startsWith("chat"))).toBe(false);
  });

  it("parks an ask as approval_pending with its request id; once approved, the identical call is admitted once", async () => {
    const store = memoryEventStore();
    const guarded = guardTool(refund, { gates: [refundRules] });
    const context = { agentId: "desk", runId: "run_g2", store, approval: { durable: true } };
    const first = await withRun(context, () =>
      guarded({ order_id: "A1", amount: 300 }, { toolUseId: "tu_1" }),
    );
    expect(first.type).toBe("refused");
    const requestId = first.type === "refused" ? String(first.decision.details?.requestId) : "";
    expect(first).toMatchObject({
      reason: "approval_pending",
      decision: { refusedAt: "3:approval" },
    });
    expect(requestId).toMatch(/^apr_/);
    expect(first.type === "refused" && first.message).toContain(requestId);
    expect(foldRun(await store.read("run_g2")).status).toBe("awaiting_approval");
    expect(refunds).toEqual([]);

    await expect(
      approveRun({
        store,
        runId: "run_g2",
        answer: { decision: "approve", requestId: "apr_nope" },
      }),
    ).rejects.toThrow(/apr_nope is not one of them/);
    expect(
      await approveRun({
        store,
        runId: "run_g2",
        answer: { decision: "approve", approver: "maria" },
      }),
    ).toEqual({
      requestId,
      decision: "approve",
    });

    const outcomes = await withRun(context, async () => [
      await guarded({ order_id: "A1", amount: 200 }, { toolUseId: "tu_2" }),
      await guarded({ order_id: "A1", amount: 300 }, { toolUseId: "tu_3" }),
      await guarded({ order_id: "A1", amount: 300 }, { toolUseId: "tu_4" }),
    ]);
    expect(
      outcomes.map((outcome) => (outcome.type === "refused" ? outcome.reason : outcome.type)),
    ).toEqual(["approval_pending", "ok", "approval_pending"]);
    expect(refunds).toEqual(["A1:300:run_g2:tu_3"]);
    const fold = foldRun(await store.read("run_g2"));
    expect(fold.status).toBe("awaiting_approval");
    expect(fold.usedApprovals).toEqual(new Set([requestId]));
  });

  it("an unanswered identical call keeps its one request; a denied one is refused", async () => {
    const store = memoryEventStore();
    const guarded = guardTool(refund, { gates: [refundRules] });
    const context = { runId: "run_g3", store, approval: { durable: true } };
    const ids = await withRun(context, async () => {
      const a = await guarded({ order_id: "A9", amount: 500 }, { toolUseId: "tu_1" });
      const b = await guarded({ order_id: "A9", amount: 500 }, { toolUseId: "tu_2" });
      return [a, b].map((outcome) =>
        outcome.type === "refused" ? outcome.decision.details?.requestId : undefined,
      );
    });
    expect(ids[0]).toBe(ids[1]);
    await approveRun({ store, runId: "run_g3", answer: { decision: "deny", note: "too much" } });
    const after = await withRun(context, () =>
      guarded({ order_id: "A9", amount: 500 }, { toolUseId: "tu_3" }),
    );
    expect(after).toMatchObject({ type: "refused", reason: "approval_denied" });
    expect(refunds).toEqual([]);
  });

  it("keeps the budget: maxToolCalls and maxUsd refuse at step 5", async () => {
    const store = memoryEventStore();
    const guarded = guardTool(refund);
    const reasons = await withRun({ store, budget: { maxToolCalls: 2 } }, async () => {
      const out: string[] = [];
      for (let index = 0; index < 3; index += 1) {
        const outcome = await guarded(
          { order_id: `A${index}`, amount: 1 },
          { toolUseId: `tu_${index}` },
        );
        out.push(
          outcome.type === "refused"
            ? `${outcome.reason}@${outcome.decision.refusedAt}`
            : outcome.type,
        );
      }
      return out;
    });
    expect(reasons).toEqual(["ok", "ok", "budget_exceeded@5:budget"]);
    const paid = tool({
      name: "paid",
      description: "Costs money.",
      input: v.object({}),
      costUsd: 0.3,
      run: () => "ok",
    });
    const guardedPaid = guardTool(paid);
    const paidReasons = await withRun({ budget: { maxUsd: 0.5 } }, async () => [
      (await guardedPaid({}, { toolUseId: "p1" })).type,
      (await guardedPaid({}, { toolUseId: "p2" })).type,
    ]);
    expect(paidReasons).toEqual(["ok", "refused"]);
  });

  it("logs a halt and ends the run halted; a failing fn ends it failed", async () => {
    const store = memoryEventStore();
    const guarded = guardTool(refund, { gates: [refundRules], haltOn: ["blocked_order"] });
    await withRun({ runId: "run_h", store }, async (run) => {
      await guarded({ order_id: "X", amount: 1 }, { toolUseId: "tu_1" });
      expect(run.halted).toBe(true);
    });
    const events = await store.read("run_h");
    expect(events.map((event) => event.type)).toContain("run-halt");
    expect(foldRun(events).status).toBe("halted");
    await expect(
      withRun({ runId: "run_f", store }, async () => {
        throw new Error("host bug");
      }),
    ).rejects.toThrow("host bug");
    expect((await store.read("run_f")).at(-1)).toMatchObject({
      type: "run-end",
      status: "failed",
      error: "host bug",
    });
  });

  it("says what is wrong: a loop run's id, an ended run, a bad store or budget", async () => {
    const store = memoryEventStore();
    await withRun({ runId: "run_done", store }, () => undefined);
    await expect(withRun({ runId: "run_done", store }, () => undefined)).rejects.toThrow(
      /\[core\] withRun: run run_done already ended \(completed\); omit runId/,
    );
    await store.append(
      "run_loop",
      [
        {
          type: "run-start",
          runId: "run_loop",
          agentId: "a",
          task: "t",
          model: "claude-sonnet-5-5",
          maxTokens: 10,
          budget: {},
          policyDigest: "",
          toolDigest: "",
          at: 1,
        },
      ],
      { expectedSeq: 0 },
    );
    await expect(withRun({ runId: "run_loop", store }, () => undefined)).rejects.toThrow(
      /is a loop run .*agent.resume/,
    );
    expect(() => withRun({ store: {} as never }, () => undefined)).toThrow(
      /store must be an EventStore/,
    );
    expect(() => withRun({ budget: { maxUsd: -1 } }, () => undefined)).toThrow(
      /budget.maxUsd must be a non-negative number/,
    );
  });
});

describe("stopRun", () => {
  it("ends the run stopped with its why, withdraws every open request, and approveRun then says the run ended", async () => {
    const store = memoryEventStore();
    const guarded = guardTool(refund, { gates: [refundRules] });
    await withRun({ runId: "run_stop", store, approval: { durable: true } }, async (run) => {
      expect(await guarded({ order_id: "A1", amount: 300 }, { toolUseId: "tu_1" })).toMatchObject({
        reason: "approval_pending",
      });
      stopRun(run, "host_disconnected", "the host hung up");
    });
    const events = await store.read("run_stop");
    expect(events.map((event) => event.type)).toEqual([
      "run-start",
      "approval-request",
      "approval-decision",
      "run-end",
    ]);
    expect(events[2]).toMatchObject({ decision: "withdrawn" });
    expect(events[3]).toMatchObject({
      status: "stopped",
      why: "host_disconnected",
      error: "the host hung up",
    });
    expect(foldRun(events).status).toBe("stopped");
    await expect(
      approveRun({ store, runId: "run_stop", answer: { decision: "approve" } }),
    ).rejects.toThrow(/run run_stop has no approval waiting \(status stopped\)/);
    // A run with nothing open ends stopped too, and bad input says what to pass.
    await withRun({ runId: "run_stop2", store }, (run) => stopRun(run, "server_exited"));
    expect((await store.read("run_stop2")).at(-1)).toMatchObject({
      status: "stopped",
      why: "server_exited",
    });
    await withRun({ agentId: "a" }, (run) => {
      expect(() => stopRun(run, "Host gone")).toThrow(/why must be a snake_case code/);
    });
    expect(() => stopRun({} as never, "x")).toThrow(/run must be the handle withRun gave/);
  });
});

describe("withRun with a vault", () => {
  it("gates judge real values, tools get real values, the log and the model keep tokens", async () => {
    const store = memoryEventStore();
    const table = new Map([["<EMAIL_1>", "alice@acme-shop.com"]]);
    const vault = {
      tokenize: (text: string) => text.replaceAll("alice@acme-shop.com", "<EMAIL_1>"),
      reveal<T>(value: T): T {
        return JSON.parse(
          JSON.stringify(value).replaceAll("<EMAIL_1>", table.get("<EMAIL_1>")!),
        ) as T;
      },
    };
    const seen: unknown[] = [];
    const domainGate: Gate = {
      name: "domain",
      step: "2",
      check: (call) => {
        seen.push(call.args.to);
        return String(call.args.to).endsWith("@acme-shop.com")
          ? { type: "allow" }
          : { type: "deny", reason: "outside_domain", message: "Only acme-shop.com." };
      },
    };
    const sent: string[] = [];
    const email = tool({
      name: "send_email",
      description: "Send an email.",
      input: v.object({ to: v.string() }),
      reveal: true,
      run: (args) => {
        sent.push(args.to);
        return `sent to ${args.to}`;
      },
    });
    const guarded = guardTool(email, { gates: [domainGate] });
    const outcome = await withRun({ runId: "run_v", store, vault }, () =>
      guarded({ to: "<EMAIL_1>" }, { toolUseId: "tu_1" }),
    );
    expect(seen).toEqual(["alice@acme-shop.com"]);
    expect(sent).toEqual(["alice@acme-shop.com"]);
    expect(outcome).toMatchObject({ type: "ok", content: "sent to <EMAIL_1>" });
    const logged = JSON.stringify(await store.read("run_v"));
    expect(logged).not.toContain("alice@acme-shop.com");
    expect(logged).toContain("<EMAIL_1>");
  });
});

describe("guardTool without a toolUseId", () => {
  const warnings: Error[] = [];
  const listener = (warning: Error) => warnings.push(warning);
  beforeEach(() => {
    warnings.length = 0;
    process.on("warning", listener);
  });
  afterEach(() => {
    process.off("warning", listener);
  });

  it("warns once per tool that the idempotency key is random", async () => {
    const guarded = guardTool(refund);
    await withRun({}, async () => {
      await guarded({ order_id: "A1", amount: 1 });
      await guarded({ order_id: "A2", amount: 1 });
      await guarded({ order_id: "A3", amount: 1 }, { toolUseId: "tu_3" });
    });
    await new Promise((resolve) => setImmediate(resolve));
    const ours = warnings.filter(
      (warning) => (warning as { code?: string }).code === "LOOPGUARD_NO_TOOL_USE_ID",
    );
    expect(ours).toHaveLength(1);
    expect(ours[0]!.message).toMatch(/guardTool\(issue_refund\) was called without a toolUseId/);
  });
});

describe("agent.approve on a guarded run", () => {
  it("records the answer and never drives a model loop", async () => {
    const { createAgent } = await import("./agent.js");
    const { scriptedModel } = await import("./testing/scripted-model.js");
    const store = memoryEventStore();
    const guarded = guardTool(refund, { gates: [refundRules] });
    const context = { runId: "run_a", store, approval: { durable: true } };
    await withRun(context, () => guarded({ order_id: "A5", amount: 900 }, { toolUseId: "tu_1" }));
    const agent = createAgent({ model: scriptedModel([]), tools: [refund], store });
    const result = await agent.approve("run_a", { decision: "approve", approver: "maria" });
    expect(result.status).toBe("running");
    const after = await withRun(context, () =>
      guarded({ order_id: "A5", amount: 900 }, { toolUseId: "tu_2" }),
    );
    expect(after.type).toBe("ok");
    expect(refunds).toEqual(["A5:900:run_a:tu_2"]);
  });
});
