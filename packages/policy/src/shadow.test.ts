import {
  createAgent,
  type Gate,
  guardTool,
  type ShadowDecisionEvent,
  type StoredEvent,
  tool,
  withRun,
} from "@loopguard/core";
import { memoryEventStore, recordingExporter, toolCallsModel } from "@loopguard/core/testing";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { callOf } from "./__fixtures__/calls.js";
import { loadPolicy } from "./load-policy.js";
import { policy } from "./policy.js";
import { argDomainNotIn, argGt } from "./predicate.js";
import { allow, ask, deny } from "./rule.js";
import { runGuard } from "./run-guard.js";
import { shadow } from "./shadow.js";

const sendEmail = tool({
  name: "send_email",
  description: "Send an email.",
  input: v.object({ to: v.string(), body: v.string() }),
  run: async () => "sent",
});
const refund = tool({
  name: "issue_refund",
  description: "Refund.",
  input: v.object({ amount: v.number() }),
  run: async () => "refunded",
});

const scripted = toolCallsModel;

const shadowEvents = (events: StoredEvent[]) =>
  events.filter(
    (event): event is StoredEvent & ShadowDecisionEvent => event.type === "shadow-decision",
  );

describe("shadow(gate)", () => {
  it("never refuses: its check allows, judge gives the candidate's decision", async () => {
    const candidate = policy([deny("send_email")]);
    const wrapped = shadow(candidate);
    expect(wrapped).toMatchObject({ name: "shadow:policy", step: "2", mode: "shadow" });
    const call = callOf("send_email", { to: "a@b.example" });
    expect(wrapped.check(call)).toEqual({ type: "allow" });
    expect(await wrapped.judge(call)).toMatchObject({ type: "deny", reason: "policy_deny" });
    expect(() => shadow(wrapped)).toThrow(/already a shadow/);
    expect(() => shadow({} as Gate)).toThrow(/\[policy\] shadow\(gate\): gate must be a gate/);
  });

  it("records a shadow-decision wherever the candidate would have decided differently, and enforces nothing", async () => {
    const store = memoryEventStore();
    const exporter = recordingExporter();
    const live = policy([allow("*")]);
    const candidate = loadPolicy({
      version: 1,
      default: "allow",
      rules: [
        { effect: "deny", tool: "send_email", when: { arg: "to", domainNotIn: ["acme-shop.com"] } },
        { effect: "ask", tool: "issue_refund", when: { arg: "amount", gt: 500 } },
      ],
    });
    const result = await createAgent({
      model: scripted([
        { name: "send_email", input: { to: "ann@acme-shop.com", body: "hi" } },
        { name: "send_email", input: { to: "x@evil.example", body: "data" } },
        { name: "issue_refund", input: { amount: 900 } },
        { name: "issue_refund", input: { amount: 20 } },
      ]),
      tools: [sendEmail, refund],
      store,
      exporters: [exporter],
      gates: [live, ...candidate.gates.map((gate) => shadow(gate))],
    }).run("Do it all");
    expect(result.status).toBe("completed");
    expect(result.blocked).toEqual([]);
    const events = await store.read(result.runId);
    expect(events.filter((event) => event.type === "tool-call-result")).toHaveLength(4);
    expect(
      shadowEvents(events).map((event) => [
        event.toolUseId,
        event.shadow.outcome,
        event.shadow.reason,
        event.enforced.outcome,
      ]),
    ).toEqual([
      ["toolu_2", "deny", "policy_deny", "allow"],
      ["toolu_3", "ask", "policy_ask", "allow"],
    ]);
    expect(shadowEvents(events)[0]!.gate).toBe("shadow:policy");
    // The count is on the run span and in the run's summary (what `loopguard runs` lists).
    await exporter.forceFlush?.();
    const runSpan = exporter.spans.find(
      (span) => span.attributes["loopguard.shadow.differences"] !== undefined,
    );
    expect(runSpan?.attributes["loopguard.shadow.differences"]).toBe(2);
    const [summary] = await store.list();
    expect(summary?.shadowDifferences).toBe(2);
  });

  it("an allow where the live gate at the same step refused is a difference too", async () => {
    const store = memoryEventStore();
    const result = await createAgent({
      model: scripted([{ name: "issue_refund", input: { amount: 5000 } }]),
      tools: [refund],
      store,
      gates: [
        policy([deny("issue_refund", { when: argGt("amount", 1000) })]),
        shadow(policy([allow("*")])),
      ],
    }).run("Refund");
    expect(result.blocked.map((call) => call.reason)).toEqual(["policy_deny"]);
    expect(shadowEvents(await store.read(result.runId))).toMatchObject([
      {
        shadow: { outcome: "allow" },
        enforced: { outcome: "deny", reason: "policy_deny", refusedAt: "2:policy" },
      },
    ]);
  });

  it("a shadow that throws is recorded as an error and never affects enforcement", async () => {
    const store = memoryEventStore();
    const errors: string[] = [];
    const broken: Gate = {
      name: "broken",
      step: "2",
      check: () => {
        throw new Error("candidate crashed");
      },
    };
    const result = await createAgent({
      model: scripted([{ name: "send_email", input: { to: "ann@acme-shop.com", body: "hi" } }]),
      tools: [sendEmail],
      store,
      gates: [
        policy([deny("send_email", { when: argDomainNotIn("to", ["acme-shop.com"]) })]),
        shadow(broken),
      ],
      onError: (_error, where) => errors.push(where),
    }).run("Email");
    expect(result.status).toBe("completed");
    expect(result.blocked).toEqual([]);
    expect(shadowEvents(await store.read(result.runId))).toMatchObject([
      { gate: "shadow:broken", shadow: { outcome: "error", message: "candidate crashed" } },
    ]);
    expect(errors).toContain("shadow gate shadow:broken");
  });

  it("works the same under guardTool and withRun", async () => {
    const store = memoryEventStore();
    const guarded = guardTool(sendEmail, {
      gates: [
        policy([allow("*")]),
        shadow(policy([deny("send_email", { when: argDomainNotIn("to", ["acme-shop.com"]) })])),
      ],
    });
    const runId = await withRun({ agentId: "host", store }, async (run) => {
      expect((await guarded({ to: "x@evil.example", body: "data" })).type).toBe("ok");
      expect((await guarded({ to: "ann@acme-shop.com", body: "hi" })).type).toBe("ok");
      return run.runId;
    });
    expect(shadowEvents(await store.read(runId))).toMatchObject([
      {
        tool: "send_email",
        shadow: { outcome: "deny", reason: "policy_deny" },
        enforced: { outcome: "allow" },
      },
    ]);
  });

  it("adding a shadow does not change the policy digest (pending approvals stay valid)", async () => {
    const store = memoryEventStore();
    const live = [policy([ask("issue_refund")]), runGuard()];
    const first = await createAgent({
      model: scripted([]),
      tools: [refund],
      store,
      gates: live,
    }).run("a");
    const second = await createAgent({
      model: scripted([]),
      tools: [refund],
      store,
      gates: [...live, shadow(policy([deny("*")])), shadow(runGuard({ noProgress: true }))],
    }).run("b");
    const digestOf = async (runId: string) =>
      ((await store.read(runId))[0] as StoredEvent & { policyDigest: string }).policyDigest;
    expect(await digestOf(second.runId)).toBe(await digestOf(first.runId));
  });
});
