import type { AgentOptions, ModelRequest, StoredEvent, ToolResultBlock } from "@loopguard/core";
import { scriptedModel } from "@loopguard/core/testing";
import { deskOptions } from "../desk-options.js";
import { type Scenario, type ScenarioContext, scenario } from "../scenario.js";
import { gullibleModel } from "../support-desk/gullible-model.js";
import type { SupportDesk } from "../support-desk/support-desk.js";

const task = "Hi, order A1001 arrived broken. Can I get a refund?";

/** The agent options every support-desk scenario starts from. */
export function deskAgentOptions(
  t: ScenarioContext,
  desk: SupportDesk,
  extra: Partial<AgentOptions> = {},
): AgentOptions {
  const defences = t.defences();
  return {
    model: gullibleModel(),
    ...deskOptions(desk, defences),
    retry: t.retry,
    budget: { maxUsd: 0.5, maxSteps: 15, wallClockMs: 5_000 },
    ...extra,
  };
}

const toolResults = (request: ModelRequest | undefined): ToolResultBlock[] =>
  (request?.messages ?? []).flatMap((message) =>
    message.role === "user" && Array.isArray(message.content)
      ? message.content.filter((block): block is ToolResultBlock => block.type === "tool_result")
      : [],
  );

/** A damaged order is refunded once, with cost and steps accounted. */
export const refundHappyPath: Scenario = scenario(
  {
    name: "refund_happy_path",
    category: "happy_path",
    title: "A damaged order is looked up, refunded once and answered",
  },
  async (t) => {
    const desk = t.desk();
    const model = gullibleModel();
    const result = await t.agent(deskAgentOptions(t, desk, { model })).run(task);
    t.check("completed", result.status === "completed", `${result.status} ${result.why}`);
    t.check(
      "one_refund_of_the_order_total",
      desk.ledger.refunds.length === 1 &&
        desk.ledger.refunds[0]!.payload.amount === 89.99 &&
        desk.ledger.refunds[0]!.payload.order_id === "A1001",
      JSON.stringify(desk.ledger.refunds.map((effect) => effect.payload)),
    );
    t.check("no_email_sent", desk.ledger.emails.length === 0);
    t.check(
      "nothing_blocked",
      result.blocked.length === 0,
      result.blocked.map((call) => call.reason).join(","),
    );
    t.check("answer_confirms_refund", /refund .*on its way/i.test(result.answer), result.answer);
    t.check("three_model_steps", result.steps === 3, String(result.steps));
    t.check(
      "cost_accounted",
      result.costUsd > 0 && result.costUsd < 0.5,
      `$${result.costUsd.toFixed(5)}`,
    );
  },
);

/** Two tool calls of one turn run concurrently and go back in one user message. */
export const parallelToolCalls: Scenario = scenario(
  {
    name: "parallel_tool_calls",
    category: "happy_path",
    title: "Two tool calls of one turn run at once and return in one message",
  },
  async (t) => {
    const desk = t.desk({ latencyMs: 15 });
    const model = gullibleModel();
    const result = await t.agent(deskAgentOptions(t, desk, { model })).run(task);
    t.check("completed", result.status === "completed", result.status);
    t.check("ran_concurrently", desk.maxConcurrent === 2, `max in flight ${desk.maxConcurrent}`);
    const second = model.requests[1];
    const lastUser = second?.messages.at(-1);
    const results =
      lastUser && Array.isArray(lastUser.content)
        ? lastUser.content.filter((block) => block.type === "tool_result")
        : [];
    t.check(
      "one_user_message_with_both_results",
      results.length === 2,
      `${results.length} results in the last message`,
    );
    t.check(
      "results_in_call_order",
      results.map((block) => (block as ToolResultBlock).tool_use_id).join(",") ===
        "toolu_01_1,toolu_01_2",
      results.map((block) => (block as ToolResultBlock).tool_use_id).join(","),
    );
  },
);

/** A model that never stops is stopped by the USD cap and by the step cap. */
export const runawayLoopBudgets: Scenario = scenario(
  {
    name: "runaway_loop_budgets",
    category: "budget",
    title: "A model that never stops is stopped by the USD cap and the step cap",
    notLive: "needs a model that loops forever",
  },
  async (t) => {
    const looping = () =>
      scriptedModel((_request, call) => ({
        content: [
          {
            type: "tool_use",
            id: `toolu_loop_${call}`,
            name: "search_kb",
            input: { query: `refund policy variant ${call}` },
          },
        ],
        usage: { input_tokens: 2_000, output_tokens: 400 },
      }));
    const usdDesk = t.desk();
    const usd = await t
      .agent(
        deskAgentOptions(t, usdDesk, {
          model: looping(),
          budget: { maxUsd: 0.05 },
          maxTokens: 1_000,
        }),
      )
      .run(task);
    t.check(
      "usd_cap_stops_run",
      usd.status === "stopped" && usd.limit === "maxUsd",
      `${usd.status} ${usd.limit ?? ""}`,
    );
    t.check("usd_spend_within_cap", usd.costUsd <= 0.05, `$${usd.costUsd.toFixed(4)} of $0.05`);
    const stepDesk = t.desk();
    const steps = await t
      .agent(deskAgentOptions(t, stepDesk, { model: looping(), budget: { maxSteps: 5 } }))
      .run(task);
    t.check(
      "step_cap_stops_run",
      steps.status === "stopped" && steps.limit === "maxSteps",
      `${steps.status} ${steps.limit ?? ""}`,
    );
    t.check("exactly_max_steps", steps.steps === 5, String(steps.steps));
  },
);

/** A hanging tool is abandoned at its timeout; a slow model is stopped by the wall clock. */
export const timeouts: Scenario = scenario(
  {
    name: "timeouts",
    category: "faults",
    title: "A hanging tool times out per call; a slow model hits the wall clock",
    notLive: "needs injected hangs",
  },
  async (t) => {
    const desk = t.desk({
      faults: { lookup_order: ["hang", "hang"] },
      timeoutMs: { lookup_order: 20 },
    });
    const started = performance.now();
    const result = await t
      .agent(deskAgentOptions(t, desk, { toolRetry: { maxAttempts: 2, delayMs: 1 } }))
      .run(task);
    const events = t.observed.events;
    const lookup = events.find(
      (event): event is Extract<StoredEvent, { type: "tool-call-result" }> =>
        event.type === "tool-call-result" && event.tool === "lookup_order",
    );
    t.check("tool_timed_out", lookup?.errorKind === "timeout", lookup?.errorKind);
    t.check("idempotent_tool_retried_once", lookup?.attempts === 2, String(lookup?.attempts));
    t.check("run_still_answers", result.status === "completed", result.status);
    t.check(
      "no_refund_without_order_total",
      desk.ledger.refunds.length === 0,
      String(desk.ledger.refunds.length),
    );
    const slow = scriptedModel([{ content: "thinking...", delayMs: 5_000 }]);
    const clockDesk = t.desk();
    const slowStarted = performance.now();
    const stopped = await t
      .agent(deskAgentOptions(t, clockDesk, { model: slow, budget: { wallClockMs: 30 } }))
      .run(task);
    const elapsed = performance.now() - slowStarted;
    t.check(
      "wall_clock_stops_run",
      stopped.status === "stopped" && stopped.limit === "wallClockMs",
      `${stopped.status} ${stopped.why}`,
    );
    t.check("stopped_promptly", elapsed < 1_000, `${Math.round(elapsed)} ms`);
    t.check("whole_scenario_fast", performance.now() - started < 2_000);
  },
);

const httpError = (status: number, headers: Record<string, string> = {}) =>
  Object.assign(new Error(`HTTP ${status}`), { status, headers });

/** 429, 500, 529 and connection errors are retried; a 400 fails at once. */
export const transientApiErrors: Scenario = scenario(
  {
    name: "transient_api_errors",
    category: "faults",
    title: "429, 500, 529 and connection errors are retried; a 400 fails fast",
    notLive: "needs injected API errors",
  },
  async (t) => {
    const desk = t.desk();
    const inner = gullibleModel();
    const faults = [
      httpError(429, { "retry-after-ms": "1" }),
      httpError(500),
      httpError(529),
      Object.assign(new Error("socket hang up"), { name: "APIConnectionError" }),
    ];
    let calls = 0;
    const model = {
      ...inner,
      name: "faulty",
      model: inner.model,
      create: (request: ModelRequest, options: { signal: AbortSignal }) => {
        calls += 1;
        // Each of the three steps meets a fault before it succeeds; the first step meets two.
        if (calls <= 2) return Promise.reject(faults[calls - 1]);
        if (calls === 4 || calls === 6) return Promise.reject(faults[calls === 4 ? 2 : 3]);
        return inner.create(request, options);
      },
    };
    const result = await t
      .agent(deskAgentOptions(t, desk, { model, retry: { ...t.retry, maxAttempts: 3 } }))
      .run(task);
    const retries = t.observed.events.filter((event) => event.type === "model-retry") as Extract<
      StoredEvent,
      { type: "model-retry" }
    >[];
    t.check(
      "completed_despite_errors",
      result.status === "completed",
      `${result.status} ${result.error ?? ""}`,
    );
    t.check(
      "four_retries_recorded",
      retries.length === 4,
      retries.map((event) => event.kind).join(","),
    );
    t.check(
      "kinds_classified",
      retries.map((event) => event.kind).join(",") ===
        "rate_limit,server_error,overloaded,connection",
      retries.map((event) => event.kind).join(","),
    );
    t.check("retry_after_honoured", retries[0]?.waitMs === 1, String(retries[0]?.waitMs));
    t.check("refunded_once", desk.ledger.refunds.length === 1, String(desk.ledger.refunds.length));
    const badDesk = t.desk();
    let badCalls = 0;
    const bad = {
      name: "faulty",
      model: inner.model,
      create: () => {
        badCalls += 1;
        return Promise.reject(httpError(400));
      },
    };
    const before = t.observed.events.length;
    const failed = await t.agent(deskAgentOptions(t, badDesk, { model: bad })).run(task);
    const after = t.observed.events.slice(before);
    t.check(
      "bad_request_fails_fast",
      failed.status === "failed" && badCalls === 1,
      `${failed.status} after ${badCalls} call(s)`,
    );
    t.check("bad_request_not_retried", !after.some((event) => event.type === "model-retry"));
    t.check(
      "error_says_what_to_do",
      /400/.test(failed.error ?? "") && /check/.test(failed.error ?? ""),
      failed.error,
    );
  },
);

/** Idempotent tools are retried, non-idempotent ones are not, and a failing tool's breaker opens. */
export const flakyTools: Scenario = scenario(
  {
    name: "flaky_tools",
    category: "faults",
    title: "Idempotent tools are retried, refunds are not, a failing tool's breaker opens",
    notLive: "needs injected tool faults",
  },
  async (t) => {
    const desk = t.desk({
      faults: { lookup_order: ["transient", "transient"], issue_refund: ["transient"] },
    });
    const result = await t
      .agent(deskAgentOptions(t, desk, { toolRetry: { maxAttempts: 3, delayMs: 1 } }))
      .run(task);
    const results = t.observed.events.filter(
      (event) => event.type === "tool-call-result",
    ) as Extract<StoredEvent, { type: "tool-call-result" }>[];
    const lookup = results.find((event) => event.tool === "lookup_order");
    const refund = results.find((event) => event.tool === "issue_refund");
    t.check(
      "idempotent_lookup_retried_to_success",
      lookup?.status === "ok" && lookup.attempts === 3,
      `${lookup?.status} after ${lookup?.attempts}`,
    );
    t.check(
      "refund_not_retried",
      refund?.status === "error" && refund.attempts === 1,
      `${refund?.status} after ${refund?.attempts}`,
    );
    t.check("no_refund_paid", desk.ledger.refunds.length === 0, String(desk.ledger.refunds.length));
    t.check("run_ends_with_an_answer", result.status === "completed", result.status);
    // An outage (the client throws), not the backend answering "no": a ToolError that is not
    // transient is an answer and does not count towards the breaker.
    const breakerDesk = t.desk({ faults: { search_kb: ["crash", "crash", "crash", "crash"] } });
    const model = scriptedModel((_request, call) =>
      call <= 4
        ? {
            content: [
              {
                type: "tool_use",
                id: `toolu_kb_${call}`,
                name: "search_kb",
                input: { query: `attempt ${call}` },
              },
            ],
          }
        : { content: "The help centre is down." },
    );
    const broken = await t
      .agent(
        deskAgentOptions(t, breakerDesk, {
          model,
          breaker: { failureThreshold: 3, cooldownMs: 60_000 },
        }),
      )
      .run(task);
    t.check(
      "breaker_opens_after_threshold",
      broken.blocked.some((call) => call.reason === "circuit_open"),
      broken.blocked.map((call) => call.reason).join(","),
    );
    t.check(
      "open_breaker_spares_the_backend",
      breakerDesk.calls.search_kb === 3,
      `${breakerDesk.calls.search_kb} backend calls`,
    );
  },
);

/** Malformed tool input, max_tokens, pause_turn, refusal and garbage replies are handled. */
export const modelOutputEdgeCases: Scenario = scenario(
  {
    name: "model_output_edge_cases",
    category: "faults",
    title: "Malformed tool input, max_tokens, pause_turn, refusal and garbage replies",
    notLive: "needs scripted stop reasons",
  },
  async (t) => {
    const run = async (script: Parameters<typeof scriptedModel>[0]) => {
      const desk = t.desk();
      const model = scriptedModel(script);
      const result = await t.agent(deskAgentOptions(t, desk, { model })).run(task);
      return { result, desk, model };
    };
    const malformed = await run([
      {
        content: [
          { type: "tool_use", id: "toolu_bad", name: "lookup_order", input: { orderId: 1001 } },
        ],
      },
      { content: "Sorry, let me try again later." },
    ]);
    t.check(
      "malformed_input_refused_not_run",
      malformed.result.blocked[0]?.reason === "invalid_arguments" &&
        malformed.desk.calls.lookup_order === 0,
      malformed.result.blocked[0]?.reason,
    );
    t.check(
      "model_told_what_to_fix",
      /order_id/.test(toolResults(malformed.model.requests[1])[0]?.content as string),
      String(toolResults(malformed.model.requests[1])[0]?.content).slice(0, 120),
    );
    t.check("run_recovers_after_malformed_input", malformed.result.status === "completed");
    const truncated = await run([{ content: "Your refund is", stop_reason: "max_tokens" }]);
    t.check(
      "max_tokens_stops_with_partial_answer",
      truncated.result.status === "stopped" &&
        truncated.result.why === "max_tokens" &&
        truncated.result.answer === "Your refund is",
      `${truncated.result.status} ${truncated.result.why}`,
    );
    const paused = await run([
      { content: "Working on it", stop_reason: "pause_turn" },
      { content: "Done: refund issued." },
    ]);
    t.check(
      "pause_turn_continues",
      paused.result.status === "completed" &&
        paused.model.calls === 2 &&
        paused.model.requests[1]?.messages.at(-1)?.role === "assistant",
      `${paused.result.status}, ${paused.model.calls} calls`,
    );
    const refusal = await run([{ content: "", stop_reason: "refusal" }]);
    t.check(
      "refusal_stops_cleanly",
      refusal.result.status === "stopped" && refusal.result.why === "refusal",
      `${refusal.result.status} ${refusal.result.why}`,
    );
    const garbage = await run([{ content: [{ text: "no type" } as never] }]);
    t.check(
      "garbage_reply_fails_with_clear_error",
      garbage.result.status === "failed" && /malformed/.test(garbage.result.error ?? ""),
      garbage.result.error,
    );
  },
);
