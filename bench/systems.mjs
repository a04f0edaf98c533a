// The systems of the loop benchmarks, each a factory of `runOnce(steps)`: the same scripted
// workload (a model that calls a tool returning a 2 KB page of prose `steps` times, then
// answers), run by loopguard, a hand-written loop and the peers. `runOnce` returns what the
// finished run holds, so callers can measure its memory.
import { prosePage } from "./payload.mjs";

const payload = prosePage(2048);

async function loopguard(allGates, captureContent = false, scanner = "heuristic") {
  const v = await import("valibot");
  const core = await import("@loopguard/core");
  const { memoryEventStore } = await import("@loopguard/core/testing");
  const fetchDoc = core.tool({
    name: "fetch_doc",
    description: "Fetch a page of a document.",
    input: v.object({ page: v.number() }),
    run: async () => payload,
  });
  const options = { tools: [fetchDoc] };
  const active = [];
  if (allGates) {
    const policy = await import("@loopguard/policy");
    const injection = await import("@loopguard/injection");
    const redactPkg = await import("@loopguard/redact");
    // 50 rules: 49 that never match this tool (each is still evaluated) and the one that allows it.
    const rules = [];
    for (let index = 0; index < 49; index += 1) rules.push(policy.deny(`tool_${index}_*`));
    rules.push(policy.allow("fetch_*"));
    options.gates = [policy.policy(rules), policy.runGuard()];
    active.push("policy (50 rules)", "RunGuard");
    options.gates.push(injection.taintGate());
    active.push("taint gate");
    if (scanner === "default") {
      options.scanner = injection.defaultScanner();
      active.push("default scanner (rules + learned detector)");
    } else {
      options.scanner = injection.heuristicScanner();
      active.push("heuristic scanner");
    }
    options.envelope = injection.quarantine();
    active.push("quarantine envelope");
    options.redact = redactPkg.createRedactor();
    // Traces are built and redacted for an exporter that drops them, so the cost is the runtime's.
    // By default it sends no message content, like OpenTelemetry's GenAI default (and
    // otelExporter's); the `-content` system captures content, so all of it is redacted.
    options.exporters = [
      {
        name: "null",
        captureContent,
        export: () => ({ code: "success" }),
        shutdown: async () => {},
      },
    ];
    active.push(
      captureContent
        ? "redacted traces with message content"
        : "redacted traces (no message content)",
      "in-memory store",
    );
  }
  const usage = {
    input_tokens: 10,
    output_tokens: 10,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
  };
  const runOnce = async (steps) => {
    let call = 0;
    // A minimal Model that records nothing, like the peers' below.
    const model = {
      name: "bench",
      model: "claude-sonnet-5-5",
      async create() {
        call += 1;
        return call <= steps
          ? {
              id: `msg_${call}`,
              type: "message",
              role: "assistant",
              model: "claude-sonnet-5-5",
              content: [
                { type: "tool_use", id: `toolu_${call}`, name: "fetch_doc", input: { page: call } },
              ],
              stop_reason: "tool_use",
              stop_sequence: null,
              usage,
            }
          : {
              id: `msg_${call}`,
              type: "message",
              role: "assistant",
              model: "claude-sonnet-5-5",
              content: [{ type: "text", text: "done" }],
              stop_reason: "end_turn",
              stop_sequence: null,
              usage,
            };
      },
    };
    const store = memoryEventStore();
    const agent = core.createAgent({ ...options, model, store });
    const result = await agent.run("Read the whole document.");
    if (result.status !== "completed" || result.steps !== steps + 1)
      throw new Error(
        `loopguard run ended ${result.status} after ${result.steps} steps: ${result.error ?? result.why}`,
      );
    return { result, store };
  };
  runOnce.info = { active };
  return runOnce;
}

async function handLoop() {
  return async (steps) => {
    const messages = [{ role: "user", content: "Read the whole document." }];
    const tools = { fetch_doc: async () => payload };
    let call = 0;
    const model = async () => {
      call += 1;
      return call <= steps
        ? {
            content: [
              { type: "tool_use", id: `toolu_${call}`, name: "fetch_doc", input: { page: call } },
            ],
            stop_reason: "tool_use",
          }
        : { content: [{ type: "text", text: "done" }], stop_reason: "end_turn" };
    };
    for (;;) {
      const response = await model(messages);
      messages.push({ role: "assistant", content: response.content });
      if (response.stop_reason !== "tool_use") break;
      const results = [];
      for (const block of response.content) {
        if (block.type !== "tool_use") continue;
        results.push({
          type: "tool_result",
          tool_use_id: block.id,
          content: await tools[block.name](block.input),
        });
      }
      messages.push({ role: "user", content: results });
    }
    if (messages.length !== 2 * steps + 2) throw new Error("hand loop miscounted");
    return messages;
  };
}

async function aiSdk() {
  const { generateText, tool, stepCountIs, jsonSchema } = await import("ai");
  return async (steps) => {
    let call = 0;
    const usage = {
      inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
      outputTokens: { total: 10, text: 10, reasoning: 0 },
    };
    // A minimal LanguageModelV3 that records nothing.
    const model = {
      specificationVersion: "v3",
      provider: "bench",
      modelId: "bench",
      supportedUrls: {},
      async doGenerate() {
        call += 1;
        return call <= steps
          ? {
              content: [
                {
                  type: "tool-call",
                  toolCallId: `call_${call}`,
                  toolName: "fetch_doc",
                  input: JSON.stringify({ page: call }),
                },
              ],
              finishReason: { unified: "tool-calls", raw: "tool_use" },
              usage,
              warnings: [],
            }
          : {
              content: [{ type: "text", text: "done" }],
              finishReason: { unified: "stop", raw: "end_turn" },
              usage,
              warnings: [],
            };
      },
      async doStream() {
        throw new Error("not used");
      },
    };
    const result = await generateText({
      model,
      prompt: "Read the whole document.",
      tools: {
        fetch_doc: tool({
          description: "Fetch a page of a document.",
          inputSchema: jsonSchema({
            type: "object",
            properties: { page: { type: "number" } },
            required: ["page"],
          }),
          execute: async () => payload,
        }),
      },
      stopWhen: stepCountIs(steps + 1),
    });
    if (result.text !== "done")
      throw new Error(
        `ai sdk ended with ${JSON.stringify(result.text)} after ${result.steps.length} steps`,
      );
    return result;
  };
}

async function openaiAgents() {
  const agents = await import("@openai/agents-core");
  const { z } = await import("zod");
  agents.setTracingDisabled?.(true);
  return async (steps) => {
    let call = 0;
    const usage = new agents.Usage({
      requests: 1,
      inputTokens: 10,
      outputTokens: 10,
      totalTokens: 20,
    });
    const model = {
      async getResponse() {
        call += 1;
        const output =
          call <= steps
            ? [
                {
                  type: "function_call",
                  callId: `call_${call}`,
                  name: "fetch_doc",
                  arguments: JSON.stringify({ page: call }),
                  status: "completed",
                },
              ]
            : [
                {
                  type: "message",
                  role: "assistant",
                  status: "completed",
                  content: [{ type: "output_text", text: "done" }],
                },
              ];
        return { usage, output, responseId: `resp_${call}` };
      },
      // biome-ignore lint/correctness/useYield: the bench never streams; this only fills the contract.
      async *getStreamedResponse() {
        throw new Error("not used");
      },
    };
    const fetchDoc = agents.tool({
      name: "fetch_doc",
      description: "Fetch a page of a document.",
      parameters: z.object({ page: z.number() }),
      execute: async () => payload,
    });
    const agent = new agents.Agent({
      name: "bench",
      instructions: "Read.",
      tools: [fetchDoc],
      model,
    });
    const runner = new agents.Runner({ tracingDisabled: true });
    const result = await runner.run(agent, "Read the whole document.", { maxTurns: steps + 2 });
    if (result.finalOutput !== "done")
      throw new Error(`agents sdk ended with ${JSON.stringify(result.finalOutput)}`);
    return result;
  };
}

/** Each system: a factory of `runOnce(steps)`, which runs the workload once and returns what the run holds. */
export const systems = {
  "loopguard-all-gates": () => loopguard(true),
  "loopguard-all-gates-content": () => loopguard(true, true),
  "loopguard-all-gates-default-scanner": () => loopguard(true, false, "default"),
  "loopguard-no-gates": () => loopguard(false),
  "hand-loop": handLoop,
  "ai-sdk": aiSdk,
  "openai-agents": openaiAgents,
};
