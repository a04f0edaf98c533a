/**
 * The Gate conformance suite. Every gate runs it first, then its own cases. vitest (and
 * fast-check, for the property) are loaded lazily (see `loadSuite`).
 */
import * as v from "valibot";
import { createAgent } from "../agent.js";
import type { Gate, GateDecision, ToolCall } from "../contracts/gate.js";
import type { ContentBlock } from "../contracts/model.js";
import type { DecisionRecord } from "../events.js";
import { stepOrder } from "../pipeline.js";
import type { RunState } from "../run-state.js";
import { tool } from "../tool.js";
import { runStateOf, toolCallOf } from "./event-builders.js";
import { loadFastCheck, loadSuite } from "./load-suite.js";
import { scriptedModel } from "./scripted-model.js";

/** A call for the suite: a tool name and its arguments, with the tool's flags. */
export interface GateSuiteCall {
  tool: string;
  args: Record<string, unknown>;
  sensitive?: boolean;
}

/** What `describeGate` needs to know about a gate under test. */
export interface GateSuiteOptions {
  /** The name of the `describe` block, e.g. `policy`. */
  name: string;
  /** A fresh gate with fresh state (two calls with the same settings give equal digests). */
  create: () => Gate | Promise<Gate>;
  /** Calls a fresh gate lets through in a fresh run. */
  allows: readonly GateSuiteCall[];
  /**
   * Calls a fresh gate refuses or asks about in a fresh run (leave out for gates that only
   * watch). `allows` and `refuses` together name at least one call.
   */
  refuses?: readonly GateSuiteCall[];
  /** Roles and attributes of the suite's runs. */
  run?: { roles?: readonly string[]; attributes?: RunState["attributes"] };
}

const steps = stepOrder;

/**
 * Checks that a decision has the contract's shape: returns what is wrong, or `undefined`.
 * Exported for gates' own property tests.
 */
export function decisionProblem(decision: unknown): string | undefined {
  if (!decision || typeof decision !== "object") return `not an object: ${String(decision)}`;
  const record = decision as Record<string, unknown>;
  if (record.type === "allow") return undefined;
  if (record.type !== "deny" && record.type !== "ask")
    return `type ${JSON.stringify(record.type)} is not allow, deny or ask`;
  if (typeof record.reason !== "string" || !/^[a-z][a-z0-9_]*$/.test(record.reason))
    return `reason ${JSON.stringify(record.reason)} is not a snake_case code`;
  if (typeof record.message !== "string" || record.message.trim() === "") return "message is empty";
  if (
    record.fixHints !== undefined &&
    (!Array.isArray(record.fixHints) || record.fixHints.some((hint) => typeof hint !== "string"))
  )
    return "fixHints is not an array of strings";
  if (record.details !== undefined) {
    try {
      JSON.stringify(record.details);
    } catch {
      return "details is not JSON";
    }
  }
  return undefined;
}

/**
 * Registers the Gate conformance cases: a name and a known step; a stable digest; decisions of
 * the contract's shape for the given calls, for calls outside any run and for arbitrary
 * arguments (fast-check); arguments left unchanged; concurrent checks that all settle;
 * `observe` that takes every outcome; and the gate in a real loop, where its calls are admitted
 * or refused at its own step.
 *
 * @example
 * await describeGate({
 *   name: "policy",
 *   create: () => policy([deny("delete_*")]),
 *   allows: [{ tool: "lookup_order", args: { order_id: "A1" } }],
 *   refuses: [{ tool: "delete_order", args: { order_id: "A1" } }],
 * });
 */
export async function describeGate(options: GateSuiteOptions): Promise<void> {
  const vitest = await loadSuite("describeGate", options, "allows, refuses, run");
  if (
    !Array.isArray(options.allows) ||
    options.allows.length + (options.refuses?.length ?? 0) === 0
  )
    throw new TypeError(
      "[core] describeGate(options): allows (and refuses) must name at least one call between them",
    );
  const { describe } = vitest;
  describe(`Gate conformance: ${options.name}`, () => {
    shapeCases(vitest, options);
    loopCases(vitest, options);
  });
}

type Vitest = Awaited<ReturnType<typeof loadSuite>>;

const runOf = (options: GateSuiteOptions): RunState =>
  runStateOf({
    ...(options.run?.roles ? { roles: options.run.roles } : {}),
    ...(options.run?.attributes ? { attributes: { ...options.run.attributes } } : {}),
    task: "conformance",
  });
const callFor = (entry: GateSuiteCall, run: RunState | undefined): ToolCall =>
  toolCallOf(entry.tool, structuredClone(entry.args), {
    ...(run ? { run } : {}),
    sensitive: entry.sensitive ?? false,
  });

function shapeCases(vitest: Vitest, options: GateSuiteOptions): void {
  const { expect, it } = vitest;
  const refuses = options.refuses ?? [];

  it("has a name and a known step, and a digest that depends only on its settings", async () => {
    const gate = await options.create();
    expect(typeof gate.name).toBe("string");
    expect(gate.name.length).toBeGreaterThan(0);
    expect(steps).toContain(gate.step);
    if (gate.digest) {
      const digest = gate.digest();
      expect(typeof digest).toBe("string");
      expect(gate.digest()).toBe(digest);
      expect((await options.create()).digest?.()).toBe(digest);
    }
  });

  it("decides the given calls as the options say, in the contract's shape, without changing the arguments", async () => {
    for (const [entries, expected] of [
      [options.allows, "allow"],
      [refuses, "refuse"],
    ] as const) {
      for (const entry of entries) {
        const gate = await options.create();
        const call = callFor(entry, runOf(options));
        const before = structuredClone(call.args);
        const decision = await gate.check(call);
        expect(decisionProblem(decision), `${entry.tool} ${JSON.stringify(entry.args)}`).toBe(
          undefined,
        );
        expect(decision.type === "allow" ? "allow" : "refuse", entry.tool).toBe(expected);
        expect(call.args).toEqual(before);
      }
    }
  });

  it("answers a call outside any run with a decision or a throw (never a malformed value)", async () => {
    for (const entry of [...options.allows, ...refuses]) {
      const gate = await options.create();
      let decision: GateDecision | undefined;
      try {
        decision = await gate.check(callFor(entry, undefined));
      } catch (error) {
        // A throw is a deny (gate_error) in the pipeline: allowed, as long as it is an Error.
        expect(error).toBeInstanceOf(Error);
        continue;
      }
      expect(decisionProblem(decision)).toBe(undefined);
    }
  });

  it("returns a well-formed decision (or throws an Error) for any JSON arguments", async () => {
    const fc = await loadFastCheck("describeGate");
    const gate = await options.create();
    const run = runOf(options);
    const tools = [...new Set([...options.allows, ...refuses].map((entry) => entry.tool))];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...tools),
        fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 3 }), {
          maxKeys: 5,
        }),
        async (name, args) => {
          let decision: GateDecision;
          try {
            decision = await gate.check(toolCallOf(name, args as Record<string, unknown>, { run }));
          } catch (error) {
            return error instanceof Error;
          }
          return decisionProblem(decision) === undefined;
        },
      ),
      { numRuns: 60 },
    );
  });

  it("settles concurrent checks of one run, and observe takes every outcome", async () => {
    const gate = await options.create();
    const run = runOf(options);
    const entries = [...options.allows, ...(options.refuses ?? [])];
    const calls = Array.from({ length: 20 }, (_, index) =>
      callFor(entries[index % entries.length]!, run),
    );
    const decisions = await Promise.all(calls.map((call) => gate.check(call)));
    for (const decision of decisions) expect(decisionProblem(decision)).toBe(undefined);
    if (gate.observe) {
      for (const status of ["ok", "error", "refused"] as const) {
        await gate.observe({
          call: calls[0]!,
          status,
          ...(status === "refused" ? { reason: "policy_deny" } : {}),
          durationMs: 3,
        });
      }
    }
  });
}

/** The suite's tools: every tool name the options use, taking any arguments. */
function toolsFor(options: GateSuiteOptions) {
  const byName = new Map<string, boolean>();
  for (const entry of [...options.allows, ...(options.refuses ?? [])])
    byName.set(entry.tool, (byName.get(entry.tool) ?? false) || (entry.sensitive ?? false));
  return [...byName].map(([name, sensitive]) =>
    tool({
      name,
      description: `Conformance tool ${name}.`,
      input: v.looseObject({}),
      sensitive,
      run: async () => "done",
    }),
  );
}

function loopCases(vitest: Vitest, options: GateSuiteOptions): void {
  const { expect, it } = vitest;

  it("works in a real loop: allowed calls pass its step, refused ones stop there", async () => {
    const entries = [
      ...options.allows.map((entry) => ({ entry, allowed: true })),
      ...(options.refuses ?? []).map((entry) => ({ entry, allowed: false })),
    ];
    for (const [index, { entry, allowed }] of entries.entries()) {
      const gate = await options.create();
      const use: ContentBlock = {
        type: "tool_use",
        id: `toolu_conformance_${index}`,
        name: entry.tool,
        input: structuredClone(entry.args),
      };
      const records: DecisionRecord[] = [];
      const agent = createAgent({
        model: scriptedModel([
          { content: [use], stop_reason: "tool_use" },
          { content: [{ type: "text", text: "done" }] },
        ]),
        tools: toolsFor(options),
        gates: [gate],
        onEvent: (event) => {
          if (event.type === "tool-call-intent" || event.type === "tool-call-refusal")
            records.push(event.decision);
        },
        ...(options.run ? { context: { ...options.run } } : {}),
      } as Parameters<typeof createAgent>[0]);
      const result = await agent.run("conformance");
      const at = `${gate.step}:${gate.name}`;
      expect(records, `${entry.tool} ${JSON.stringify(entry.args)}`).toHaveLength(1);
      const record = records[0]!;
      if (allowed) {
        expect(record.outcome).toBe("allow");
        expect(record.passed).toContain(at);
      } else {
        expect(record.outcome).toBe("deny");
        // An ask with no approver is refused at the approval step, after the gate passed.
        expect([at, "3:approval"]).toContain(record.refusedAt);
        expect(result.blocked).toHaveLength(1);
      }
    }
  });
}
