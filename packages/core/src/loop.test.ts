import * as v from "valibot";
import { describe, expect, it } from "vitest";
import type { Gate, ModelRequest, StoredEvent, Tool, ToolUseBlock } from "./index.js";
import { createAgent, guardTool, ToolError, tool, withRun } from "./index.js";
import { memoryEventStore, recordingExporter, scriptedModel } from "./testing/index.js";

const use = (id: string, name: string, input: unknown): ToolUseBlock => ({
  type: "tool_use",
  id,
  name,
  input,
});

function workload() {
  const effects: string[] = [];
  const lookup = tool({
    name: "lookup_order",
    description: "Look up an order by id.",
    input: v.object({ order_id: v.pipe(v.string(), v.description("The order id, e.g. A1001")) }),
    idempotent: true,
    run: async ({ order_id }) => ({ order_id, status: "delivered" }),
  });
  const refund = tool({
    name: "issue_refund",
    description: "Refund an order.",
    input: v.object({ order_id: v.string(), amount: v.number() }),
    sensitive: true,
    run: async ({ order_id, amount }, context) => {
      effects.push(`refund:${order_id}:${amount}:${context.idempotencyKey}`);
      return "refunded";
    },
  });
  const slow = tool({
    name: "slow_echo",
    description: "Echo after a delay.",
    input: v.object({ text: v.string(), delay: v.number() }),
    run: async ({ text, delay }) => {
      await new Promise((resolve) => setTimeout(resolve, delay));
      effects.push(`echo:${text}`);
      return text;
    },
  });
  const failing = tool({
    name: "fail_tool",
    description: "Fails.",
    input: v.object({ how: v.picklist(["tool_error", "exception"]) }),
    run: async ({ how }) => {
      if (how === "tool_error") throw new ToolError("The payment provider declined the refund.");
      throw new TypeError("secret internal detail at /srv/app.js:12");
    },
  });
  return { effects, tools: [lookup, refund, slow, failing] };
}

/** A tiny vault for tests: e-mail addresses become stable `<EMAIL_n>` tokens. */
function emailVault() {
  const values = new Map<string, string>();
  const byValue = new Map<string, string>();
  return {
    tokenize: (text: string) =>
      text.replace(/[\w.]+@[\w.-]+/g, (email) => {
        let token = byValue.get(email);
        if (!token) {
          token = `<EMAIL_${values.size + 1}>`;
          values.set(token, email);
          byValue.set(email, token);
        }
        return token;
      }),
    reveal: <T>(value: T): T =>
      JSON.parse(
        JSON.stringify(value).replace(/<EMAIL_\d+>/g, (token) => values.get(token) ?? token),
      ) as T,
  };
}

describe("stop reasons", () => {
  it("end_turn completes with the answer", async () => {
    const { tools } = workload();
    const agent = createAgent({ model: scriptedModel([{ content: "Done." }]), tools });
    const result = await agent.run("hi");
    expect(result).toMatchObject({
      status: "completed",
      answer: "Done.",
      why: "end_turn",
      steps: 1,
    });
    expect(result.costUsd).toBeGreaterThan(0);
  });

  it("pause_turn continues with the assistant turn sent back unchanged", async () => {
    const { tools } = workload();
    const model = scriptedModel([
      { content: "Searching", stop_reason: "pause_turn" },
      { content: " and done." },
    ]);
    const result = await createAgent({ model, tools }).run("hi");
    expect(result.status).toBe("completed");
    expect(model.requests).toHaveLength(2);
    expect(model.requests[1]!.messages.at(-1)).toEqual({
      role: "assistant",
      content: [{ type: "text", text: "Searching" }],
    });
  });

  it("max_tokens stops with the partial answer and never runs a truncated tool_use", async () => {
    const { tools, effects } = workload();
    const model = scriptedModel([
      {
        content: [
          { type: "text", text: "I will refund" },
          use("toolu_1", "issue_refund", { order_id: "A1" }),
        ],
        stop_reason: "max_tokens",
      },
    ]);
    const result = await createAgent({ model, tools }).run("refund");
    expect(result).toMatchObject({ status: "stopped", why: "max_tokens", answer: "I will refund" });
    expect(effects).toEqual([]);
  });

  it("refusal stops and says so", async () => {
    const { tools } = workload();
    const result = await createAgent({
      model: scriptedModel([{ content: "", stop_reason: "refusal" }]),
      tools,
    }).run("bad");
    expect(result).toMatchObject({ status: "stopped", why: "refusal" });
  });

  it("a malformed reply fails the run cleanly with a clear error", async () => {
    const { tools } = workload();
    const model = {
      name: "broken",
      model: "claude-sonnet-5-5",
      create: async () => ({ content: "not blocks" }) as never,
    };
    const result = await createAgent({ model, tools, retry: { maxAttempts: 1 } }).run("hi");
    expect(result.status).toBe("failed");
    expect(result.error).toMatch(/malformed model response: content must be an array/);
  });
});

describe("tool calls", () => {
  it("a reply with two calls sharing one id fails as malformed before any call is judged or run", async () => {
    // Intents, decisions and results are keyed by the id: the second call would run under the
    // first one's decision, with its arguments, skipping every gate.
    for (const content of [
      [
        use("dup", "lookup_order", { order_id: "A1" }),
        use("dup", "issue_refund", { order_id: "A1", amount: 5 }),
      ],
      [
        use("dup", "issue_refund", { order_id: "A1", amount: 5 }),
        use("dup", "lookup_order", { order_id: "A1" }),
      ],
    ]) {
      const { tools, effects } = workload();
      const store = memoryEventStore();
      const result = await createAgent({
        model: scriptedModel([{ content }, { content: "done" }]),
        tools,
        store,
        retry: { maxAttempts: 1 },
      }).run("refund A1");
      expect(result.status).toBe("failed");
      expect(result.error).toMatch(
        /malformed model response: content\[1\] is a tool_use with id "dup"/,
      );
      expect(effects).toEqual([]);
      const types = (await store.read(result.runId)).map((event) => event.type);
      expect(types).not.toContain("tool-call-intent");
    }
  });

  it("runs the calls of a turn concurrently and answers in ONE message, in block order", async () => {
    const { tools, effects } = workload();
    const model = scriptedModel([
      {
        content: [
          use("t1", "slow_echo", { text: "first", delay: 60 }),
          use("t2", "slow_echo", { text: "second", delay: 5 }),
          use("t3", "lookup_order", { order_id: "A1" }),
        ],
      },
      { content: "ok" },
    ]);
    const result = await createAgent({ model, tools }).run("go");
    expect(result.status).toBe("completed");
    // Run one after the other, "first" (60 ms) would finish before "second" started; the
    // order of effects proves they overlapped, whatever the machine's load.
    expect(effects).toEqual(["echo:second", "echo:first"]);
    const reply = model.requests[1]!.messages[2]!;
    expect(reply.role).toBe("user");
    expect(
      (reply.content as Array<{ tool_use_id: string }>).map((block) => block.tool_use_id),
    ).toEqual(["t1", "t2", "t3"]);
    expect(model.requests[1]!.messages).toHaveLength(3);
  });

  it("passes thinking blocks and signatures back byte-identical", async () => {
    const { tools } = workload();
    const thinking = {
      type: "thinking" as const,
      thinking: "Let me check the order… ✓ \u2028",
      signature: "EqQBCkYIARgCKkDx/+=sig==",
    };
    const redacted = { type: "redacted_thinking" as const, data: "EmwKAhgBEgy3va3pzix/LafPsn4a" };
    const model = scriptedModel([
      { content: [thinking, redacted, use("t1", "lookup_order", { order_id: "A1" })] },
      { content: "ok" },
    ]);
    await createAgent({ model, tools }).run("go");
    const sent = model.requests[1]!.messages[1]!;
    expect(JSON.stringify(sent.content)).toBe(
      JSON.stringify([thinking, redacted, use("t1", "lookup_order", { order_id: "A1" })]),
    );
  });

  it("turns every kind of tool failure into an is_error result without stack traces", async () => {
    const { tools } = workload();
    const model = scriptedModel([
      {
        content: [
          use("t1", "lookup_order", { order_id: 42 }),
          use("t2", "no_such_tool", {}),
          use("t3", "fail_tool", { how: "tool_error" }),
          use("t4", "fail_tool", { how: "exception" }),
          use("t5", "lookup_order", { order_id: "A1", extra: true }),
          use("t6", "lookup_order", "not an object"),
        ],
      },
      { content: "ok" },
    ]);
    const result = await createAgent({ model, tools }).run("go");
    expect(result.status).toBe("completed");
    const results = model.requests[1]!.messages[2]!.content as Array<{
      tool_use_id: string;
      content: string;
      is_error?: boolean;
    }>;
    expect(results.every((block) => block.is_error === true)).toBe(true);
    const byId = Object.fromEntries(results.map((block) => [block.tool_use_id, block.content]));
    expect(byId.t1).toMatch(/invalid_arguments.*order_id/);
    expect(byId.t2).toMatch(/unknown_tool.*no_such_tool/);
    expect(byId.t3).toMatch(/tool_error.*declined the refund/);
    expect(byId.t4).toMatch(/exception/);
    expect(byId.t4).not.toMatch(/srv\/app\.js|secret internal/);
    expect(byId.t5).toMatch(/extra: unknown key/);
    expect(byId.t6).toMatch(/invalid_arguments/);
    expect(result.blocked.map((blocked) => blocked.reason).sort()).toEqual([
      "invalid_arguments",
      "invalid_arguments",
      "invalid_arguments",
      "unknown_tool",
    ]);
  });

  it("emits strict tool definitions from the valibot schema", () => {
    const { tools } = workload();
    const spec = tools[0]!.spec;
    expect(spec).toEqual({
      name: "lookup_order",
      description: "Look up an order by id.",
      strict: true,
      input_schema: {
        type: "object",
        properties: { order_id: { type: "string", description: "The order id, e.g. A1001" } },
        required: ["order_id"],
        additionalProperties: false,
      },
    });
  });

  it("rejects a bad tool declaration with a clear error", () => {
    expect(() =>
      tool({ name: "bad name", description: "x", input: v.object({}), run: () => 1 }),
    ).toThrow(/tool name "bad name" is invalid/);
    expect(() => tool({ name: "t", description: "", input: v.object({}), run: () => 1 })).toThrow(
      /non-empty description/,
    );
    expect(() =>
      tool({ name: "t", description: "d", input: v.string() as never, run: () => 1 }),
    ).toThrow(/valibot object schema/);
  });
});

describe("the pipeline and the halt latch", () => {
  const denyRefunds: Gate = {
    name: "policy",
    step: "2",
    check: (call) =>
      call.tool === "issue_refund"
        ? {
            type: "deny",
            reason: "policy_deny",
            message: "Refunds are not allowed.",
            fixHints: ["Ask a human."],
          }
        : { type: "allow" },
  };
  const killOnRefund: Gate = {
    name: "kill_switch",
    step: "0",
    check: (call) =>
      call.tool === "issue_refund"
        ? { type: "deny", reason: "kill_switch", message: "Fleet frozen." }
        : { type: "allow" },
  };

  it("records every step a refused call passed", async () => {
    const { tools, effects } = workload();
    const model = scriptedModel([
      { content: [use("t1", "issue_refund", { order_id: "A1", amount: 5 })] },
      { content: "ok" },
    ]);
    const result = await createAgent({ model, tools, gates: [denyRefunds] }).run("go");
    expect(effects).toEqual([]);
    expect(result.blocked[0]!.decision).toMatchObject({
      outcome: "deny",
      passed: ["0.7:run_halted", "1:validation"],
      refusedAt: "2:policy",
      reason: "policy_deny",
      fixHints: ["Ask a human."],
    });
  });

  it("a gate that throws is a deny (gate_error): gates fail closed", async () => {
    const { tools, effects } = workload();
    const errors: string[] = [];
    const broken: Gate = {
      name: "flaky",
      step: "2",
      check: () => {
        throw new Error("boom");
      },
    };
    const model = scriptedModel([
      { content: [use("t1", "issue_refund", { order_id: "A1", amount: 5 })] },
      { content: "ok" },
    ]);
    const result = await createAgent({
      model,
      tools,
      gates: [broken],
      onError: (_error, where) => errors.push(where),
    }).run("go");
    expect(effects).toEqual([]);
    expect(result.blocked[0]!.reason).toBe("gate_error");
    expect(errors).toContain("gate flaky");
  });

  it("a halted run refuses every later call, even of a tool with no gates, and ends halted", async () => {
    const { tools, effects } = workload();
    const model = scriptedModel([
      {
        content: [
          use("t1", "issue_refund", { order_id: "A1", amount: 5 }),
          use("t2", "lookup_order", { order_id: "A1" }),
        ],
      },
      { content: "never" },
    ]);
    const store = memoryEventStore();
    const result = await createAgent({ model, tools, gates: [killOnRefund], store }).run("go");
    expect(result.status).toBe("halted");
    expect(result.haltReason).toBe("kill_switch");
    expect(effects).toEqual([]);
    expect(result.blocked.map((blocked) => [blocked.reason, blocked.decision.refusedAt])).toEqual([
      ["kill_switch", "0:kill_switch"],
      ["run_halted", "0.7:run_halted"],
    ]);
    const events = await store.read(result.runId);
    expect(events.filter((event) => event.type === "run-halt")).toHaveLength(1);
    const resumed = await createAgent({ model: scriptedModel([]), tools, store }).resume(
      result.runId,
    );
    expect(resumed.status).toBe("halted");
  });

  it("the host can halt a run; the next call is refused at 0.7", async () => {
    const { tools, effects } = workload();
    let agentRef: { halt?: () => void } = {};
    const haltTool = tool({
      name: "halt_me",
      description: "Halts.",
      input: v.object({}),
      run: async () => {
        agentRef.halt?.();
        return "halting";
      },
    });
    const model = scriptedModel([
      { content: [use("t1", "halt_me", {})] },
      { content: [use("t2", "lookup_order", { order_id: "A1" })] },
      { content: "x" },
    ]);
    const agent = createAgent({
      model,
      tools: [...tools, haltTool],
      onEvent: (event: StoredEvent) => {
        if (event.type === "tool-call-intent")
          agentRef = { halt: () => currentState?.halt("operator_stop") };
      },
      gates: [
        {
          name: "capture",
          step: "2",
          check: (call) => {
            currentState = call.run;
            return { type: "allow" };
          },
        },
      ],
    });
    let currentState: { halt(reason: string): void } | undefined;
    const result = await agent.run("go");
    expect(result.status).toBe("halted");
    expect(result.haltReason).toBe("operator_stop");
    expect(effects).toEqual([]);
  });
});

describe("guardTool and withRun", () => {
  const { tools, effects } = workload();
  const refund = tools[1]! as Tool<{ order_id: string; amount: number }, string>;
  const loopGate: Gate = {
    name: "run_loop",
    step: "2.3",
    check: (call) =>
      call.run
        ? { type: "allow" }
        : {
            type: "deny",
            reason: "run_guard_outside_run",
            message: "Guarded calls must run inside withRun.",
          },
  };

  it("runs the same pipeline inside withRun and returns outcome values", async () => {
    const guarded = guardTool(refund, { gates: [loopGate] });
    await withRun({ agentId: "assistant" }, async (run) => {
      const ok = await guarded({ order_id: "A1", amount: 10 });
      expect(ok.type).toBe("ok");
      expect(run.calls).toHaveLength(1);
      const bad = await guarded({ order_id: "A1" } as never);
      expect(bad).toMatchObject({ type: "refused", reason: "invalid_arguments" });
      run.halt("host_stop");
      const halted = await guarded({ order_id: "A2", amount: 1 });
      expect(halted).toMatchObject({
        type: "refused",
        reason: "run_halted",
        decision: { refusedAt: "0.7:run_halted" },
      });
    });
    expect(effects.filter((effect) => effect.startsWith("refund:A1:10"))).toHaveLength(1);
    expect(effects.some((effect) => effect.startsWith("refund:A2"))).toBe(false);
  });

  it("refuses outside any run when a gate requires one, and works without", async () => {
    const guarded = guardTool(refund, { gates: [loopGate] });
    const outside = await guarded({ order_id: "A3", amount: 1 });
    expect(outside).toMatchObject({ type: "refused", reason: "run_guard_outside_run" });
    const plain = guardTool(async (args: { x: number }) => args.x * 2, { name: "double" });
    expect(await plain({ x: 21 })).toMatchObject({ type: "ok", value: 42 });
  });

  it("keeps run state per withRun across awaits and concurrent runs", async () => {
    const guarded = guardTool(tools[0]! as Tool<{ order_id: string }, unknown>, {});
    const counts = await Promise.all(
      [1, 2, 3].map((n) =>
        withRun({ agentId: `a${n}` }, async (run) => {
          for (let index = 0; index < n; index += 1) {
            await new Promise((resolve) => setTimeout(resolve, 1));
            await guarded({ order_id: `O${index}` });
          }
          return run.calls.length;
        }),
      ),
    );
    expect(counts).toEqual([1, 2, 3]);
  });
});

describe("the log, resume and spans", () => {
  it("rebuilds the conversation from the log byte-identically", async () => {
    const { tools } = workload();
    const script = [
      {
        content: [
          { type: "thinking" as const, thinking: "t", signature: "s" },
          use("t1", "lookup_order", { order_id: "A1" }),
        ],
      },
      { content: [use("t2", "issue_refund", { order_id: "A1", amount: 3 })] },
      { content: "done" },
    ];
    const reference = scriptedModel(script);
    const store = memoryEventStore();
    const first = await createAgent({ model: reference, tools, store }).run("go", {
      runId: "run_ref",
    });
    expect(first.status).toBe("completed");
    // Crash after every event boundary: replay the log prefix into a fresh store and resume.
    const events = await store.read("run_ref");
    for (let cut = 1; cut < events.length; cut += 1) {
      const partial = memoryEventStore();
      await partial.append("run_ref", events.slice(0, cut), { expectedSeq: 0 });
      const { tools: freshTools, effects } = workload();
      const answered = events
        .slice(0, cut)
        .filter((event) => event.type === "model-response").length;
      const model = scriptedModel(script.slice(answered));
      const resumed = await createAgent({ model, tools: freshTools, store: partial }).resume(
        "run_ref",
      );
      expect(resumed.error ?? resumed.status).toBe("completed");
      expect(resumed.answer).toBe("done");
      const last = model.requests.at(-1) as ModelRequest | undefined;
      if (last)
        expect(JSON.stringify(last.messages)).toBe(
          JSON.stringify(reference.requests.at(-1)!.messages),
        );
      const refundsDone = events
        .slice(0, cut)
        .some((event) => event.type === "tool-call-result" && event.tool === "issue_refund");
      expect(effects.filter((effect) => effect.startsWith("refund")).length).toBe(
        refundsDone ? 0 : 1,
      );
    }
  });

  it("exports nested spans, and a failing exporter never fails the run", async () => {
    const { tools } = workload();
    const exporter = recordingExporter();
    const broken = recordingExporter({ fail: "throw" });
    const errors: string[] = [];
    const model = scriptedModel([
      { content: [use("t1", "lookup_order", { order_id: "A1" })] },
      { content: "ok" },
    ]);
    const result = await createAgent({
      model,
      tools,
      exporters: [exporter, broken],
      onError: (_error, where) => errors.push(where),
    }).run("go");
    expect(result.status).toBe("completed");
    const names = exporter.spans.map((span) => span.name).sort();
    expect(names).toEqual([
      "chat claude-sonnet-5-5",
      "chat claude-sonnet-5-5",
      "execute_tool lookup_order",
      "invoke_agent agent",
      "step 1",
      "step 2",
    ]);
    const byName = new Map(exporter.spans.map((span) => [span.name, span]));
    const run = byName.get("invoke_agent agent")!;
    const toolSpan = byName.get("execute_tool lookup_order")!;
    const step1 = exporter.spans.find((span) => span.name === "step 1")!;
    expect(toolSpan.parentSpanId).toBe(step1.spanId);
    expect(step1.parentSpanId).toBe(run.spanId);
    expect(errors).toContain("exporter recording");
  });

  it("validates its options with errors that say what to do", () => {
    const { tools } = workload();
    expect(() => createAgent({ model: scriptedModel([], { model: "gpt-9" }), tools })).toThrow(
      /no price is known for model "gpt-9".*prices/,
    );
    expect(() => createAgent({ model: scriptedModel([]), tools, budget: { maxUsd: -1 } })).toThrow(
      /budget.maxUsd must be a positive number/,
    );
    expect(() => createAgent({ model: scriptedModel([]), tools: [tools[0]!, tools[0]!] })).toThrow(
      /two tools are named "lookup_order"/,
    );
    expect(() => createAgent({ model: {} as never, tools })).toThrow(/Model contract/);
  });
});

/**
 * A customer lookup that returns `found`, and a `send_email` tool (revealing its arguments) that
 * records where it sent.
 */
function customerTools(description: string, found: string) {
  const sent: string[] = [];
  const lookup = tool({
    name: "lookup_customer",
    description,
    input: v.object({ id: v.string() }),
    run: async () => found,
  });
  const email = tool({
    name: "send_email",
    description: "Email.",
    input: v.object({ to: v.string() }),
    reveal: true,
    run: async ({ to }) => {
      sent.push(to);
      return "sent";
    },
  });
  return { sent, lookup, email };
}

describe("the vault hook", () => {
  it("keeps personal data out of the model and the log, and gives tools the real value", async () => {
    const vault = emailVault();
    const { sent, lookup, email } = customerTools(
      "Find a customer.",
      "Customer jane.doe@example.com",
    );
    const model = scriptedModel([
      { content: [use("t1", "lookup_customer", { id: "c1" })] },
      (request) => {
        const last = JSON.stringify(request.messages.at(-1));
        const token = /<EMAIL_\d+>/.exec(last)?.[0] ?? `none:${last}`;
        return { content: [use("t2", "send_email", { to: token })] };
      },
      { content: "Emailed <EMAIL_1>." },
    ]);
    const store = memoryEventStore();
    const result = await createAgent({ model, tools: [lookup, email], store, vault }).run(
      "Email the customer of ticket 7",
    );
    expect(sent).toEqual(["jane.doe@example.com"]);
    expect(result.answer).toBe("Emailed jane.doe@example.com.");
    expect(JSON.stringify(model.requests)).not.toContain("jane.doe@example.com");
    expect(JSON.stringify(await store.read(result.runId))).not.toContain("jane.doe@example.com");
  });
});

describe("tool costs", () => {
  it("counts a tool's cost against maxUsd and refuses a call the run cannot afford", async () => {
    let runs = 0;
    const paid = tool({
      name: "paid_lookup",
      description: "Costs money.",
      input: v.object({ q: v.string() }),
      costUsd: 0.04,
      run: async () => {
        runs += 1;
        return "ok";
      },
    });
    const model = scriptedModel([
      {
        content: [
          use("t1", "paid_lookup", { q: "a" }),
          use("t2", "paid_lookup", { q: "b" }),
          use("t3", "paid_lookup", { q: "c" }),
        ],
        usage: { input_tokens: 10, output_tokens: 10 },
      },
      { content: "done", usage: { input_tokens: 10, output_tokens: 10 } },
    ]);
    const result = await createAgent({
      model,
      tools: [paid],
      budget: { maxUsd: 0.1 },
      maxTokens: 256,
    }).run("go");
    expect(runs).toBe(2);
    expect(result.blocked.map((blocked) => [blocked.reason, blocked.decision.refusedAt])).toEqual([
      ["budget_exceeded", "5:budget"],
    ]);
    expect(result.costUsd).toBeLessThanOrEqual(0.1);
  });
});

describe("errors", () => {
  it("isInstance tells the subclasses apart and works on copies", async () => {
    const { AppendConflictError, InvalidArgumentError, LoopguardError } = await import(
      "./errors.js"
    );
    const conflict = new AppendConflictError("r", 1, 2);
    const invalid = new InvalidArgumentError("[core] bad");
    expect(AppendConflictError.isInstance(conflict)).toBe(true);
    expect(AppendConflictError.isInstance(invalid)).toBe(false);
    expect(LoopguardError.isInstance(invalid)).toBe(true);
    expect(LoopguardError.isInstance(new Error("x"))).toBe(false);
    // A copy from another instance of the package: same brands, different classes.
    const copy = Object.assign(
      Object.create(Error.prototype),
      { ...conflict },
      {
        [Symbol.for("loopguard.error")]: true,
        [Symbol.for("loopguard.error.AppendConflictError")]: true,
      },
    );
    expect(AppendConflictError.isInstance(copy)).toBe(true);
  });
});

describe("span ids across resumes", () => {
  it("never emits the same span id twice, wherever the process died", async () => {
    const script = [
      { content: [use("t1", "lookup_order", { order_id: "A1" })] },
      { content: [use("t2", "issue_refund", { order_id: "A1", amount: 3 })] },
      { content: "done" },
    ];
    const reference = memoryEventStore();
    await createAgent({
      model: scriptedModel(script),
      tools: workload().tools,
      store: reference,
    }).run("go", { runId: "run_ids" });
    const events = await reference.read("run_ids");
    for (let cut = 2; cut < events.length - 1; cut += 1) {
      const store = memoryEventStore();
      await store.append("run_ids", events.slice(0, cut), { expectedSeq: 0 });
      const exporter = recordingExporter();
      const answered = events
        .slice(0, cut)
        .filter((event) => event.type === "model-response").length;
      // The first process exported what finished before it died.
      const { SpanBuilder } = await import("./spans.js");
      const builder = new SpanBuilder("run_ids");
      const before = events.slice(0, cut).flatMap((event) => builder.push(event));
      await createAgent({
        model: scriptedModel(script.slice(answered)),
        tools: workload().tools,
        store,
        exporters: [exporter],
      }).resume("run_ids");
      const ids = [...before, ...exporter.spans].map((span) => span.spanId);
      expect(new Set(ids).size, `cut at ${cut}`).toBe(ids.length);
    }
  });
});

describe("gates and the vault", () => {
  it("gates judge real values while the log keeps tokens", async () => {
    const vault = emailVault();
    const seen: string[] = [];
    const domainGate: Gate = {
      name: "policy",
      step: "2",
      check: (call) => {
        if (call.tool !== "send_email") return { type: "allow" };
        seen.push(String(call.args.to));
        return String(call.args.to).endsWith("@customer.example")
          ? { type: "allow" }
          : { type: "deny", reason: "policy_deny", message: "outside" };
      },
    };
    const { sent, lookup, email } = customerTools("Find.", "Email: jane@customer.example");
    const store = memoryEventStore();
    const model = scriptedModel([
      { content: [use("t1", "lookup_customer", { id: "c1" })] },
      { content: [use("t2", "send_email", { to: "<EMAIL_1>" })] },
      { content: "ok" },
    ]);
    const result = await createAgent({
      model,
      tools: [lookup, email],
      store,
      vault,
      gates: [domainGate],
    }).run("Email the customer");
    expect(result.blocked).toEqual([]);
    expect(seen).toEqual(["jane@customer.example"]);
    expect(sent).toEqual(["jane@customer.example"]);
    const log = JSON.stringify(await store.read(result.runId));
    expect(log).not.toContain("jane@customer.example");
    expect(log).toContain("<EMAIL_1>");
  });
});

describe("span content", () => {
  it("drops message content before redaction when no exporter sends it", async () => {
    const { tools } = workload();
    const seen: unknown[] = [];
    const redact = (value: unknown) => {
      seen.push(value);
      return value;
    };
    const noContent = { ...recordingExporter(), captureContent: false as const };
    const script = [
      { content: [use("t1", "lookup_order", { order_id: "A1" })] },
      { content: "ok" },
    ];
    await createAgent({ model: scriptedModel(script), tools, exporters: [noContent], redact }).run(
      "go",
    );
    expect(noContent.spans.length).toBeGreaterThan(0);
    expect(noContent.spans.every((span) => span.content === undefined)).toBe(true);
    const withContent = recordingExporter();
    await createAgent({
      model: scriptedModel(script),
      tools,
      exporters: [withContent],
      redact,
    }).run("go");
    expect(withContent.spans.some((span) => span.content !== undefined)).toBe(true);
  });
});
