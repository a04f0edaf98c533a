import type { EventStore, ModelRequest, StoredEvent } from "@loopguard/core";
import { tool } from "@loopguard/core";
import { memoryEventStore, scriptedModel } from "@loopguard/core/testing";
import * as v from "valibot";
import { type Scenario, scenario } from "../scenario.js";

/** A 20 KB page per number: deterministic, different per number. */
const page = (n: number) =>
  `page ${n}: ${"quarterly figures, line by line. ".repeat(640)}`.slice(0, 20_000);

const fetchPage = tool({
  name: "fetch_page",
  description: "Fetch a page of the quarterly report by its number.",
  input: v.object({ n: v.number() }),
  idempotent: true,
  run: async ({ n }) => page(n),
});

/** The number of the last page asked for, read from the request (a resumed run gets the same replies). */
function lastPage(request: ModelRequest): number {
  for (let index = request.messages.length - 1; index >= 0; index -= 1) {
    const content = request.messages[index]!.content;
    if (typeof content === "string") continue;
    for (const block of content)
      if (block.type === "tool_use") return Number(block.id.replace("page_", ""));
  }
  return 0;
}

/** Reads pages 1..steps, one per turn, then answers; summarises when asked (`tool_choice: none`). */
const reader = (steps: number) =>
  scriptedModel((request) => {
    if (request.tool_choice?.type === "none")
      return { content: `Read pages 1 to ${lastPage(request)}; the figures are consistent.` };
    const next = lastPage(request) + 1;
    if (next > steps) return { content: "The report's figures are consistent." };
    return {
      content: [{ type: "tool_use", id: `page_${next}`, name: "fetch_page", input: { n: next } }],
    };
  });

/** Prompt tokens of a request as the scripted model counts them (one per 4 bytes). */
const tokensOf = (request: ModelRequest) =>
  Math.ceil(
    Buffer.byteLength(
      JSON.stringify({ system: request.system, tools: request.tools, messages: request.messages }),
    ) / 4,
  );

const window = 60_000;
const contextWindow = {
  maxInputTokens: window,
  clearToolResults: { keepLast: 3, atFraction: 0.5 },
  compact: { atFraction: 0.8 },
};
const task = "Read the whole quarterly report and tell me whether its figures are consistent.";

/** A run whose tool results hold ten windows' worth of text completes with no request over the window. */
export const longRunUnderWindow: Scenario = scenario(
  {
    name: "long_run_under_window",
    category: "durability",
    title: "150 tool results of 20 KB (12 windows' worth) and no request over a 60k window",
    notLive: "needs a deterministic model that reads 150 pages",
  },
  async (t) => {
    const steps = 150;
    const model = reader(steps);
    const store = memoryEventStore();
    const result = await t
      .agent({ model, tools: [fetchPage], store, contextWindow, retry: t.retry })
      .run(task, { runId: "run_long" });
    t.check(
      "run_completes",
      result.status === "completed",
      `${result.status} ${result.error ?? ""}`,
    );
    t.check("every_page_read", result.steps === steps + 1, `${result.steps} steps`);
    const largest = Math.max(...model.requests.map(tokensOf));
    t.check("no_request_over_window", largest <= window, `largest prompt ${largest} tokens`);
    const events = await store.read("run_long");
    const edits = events.filter((event) => event.type === "context-edited").length;
    const compactions = events.filter((event) => event.type === "context-compacted").length;
    t.check(
      "edits_are_logged",
      edits > 0 && compactions > 0,
      `${edits} clearings, ${compactions} compactions`,
    );
    const last = JSON.stringify(model.requests.at(-1)!.messages);
    t.check(
      "first_turn_kept",
      model.requests.at(-1)!.messages[0]?.content === task,
      "the task is the first user turn of the last request",
    );
    t.check(
      "recent_results_whole",
      last.includes(page(steps).slice(0, 200)),
      "the last page read is in the last request whole",
    );
  },
);

/** A crash right after a compaction, then resume: the next request is the one the uncrashed run sent. */
export const compactionCrashSameRequest: Scenario = scenario(
  {
    name: "compaction_crash_same_request",
    category: "durability",
    title: "A crash right after a compaction, then resume: the same next requests, byte for byte",
    notLive: "needs a deterministic model to compare requests",
  },
  async (t) => {
    const steps = 60;
    const reference = reader(steps);
    const whole = await t
      .agent({ model: reference, tools: [fetchPage], store: memoryEventStore(), contextWindow })
      .run(task, { runId: "run_whole" });
    t.check("reference_completes", whole.status === "completed", whole.status);
    const durable = memoryEventStore();
    let crashed = false;
    // The process dies right after the compaction is durable: nothing after it is written.
    const dying: EventStore = {
      ...durable,
      name: "dying",
      async append(runId, events, options) {
        if (crashed) throw new Error("the process is gone");
        const appended = await durable.append(runId, events, options);
        if (events.some((event) => event.type === "context-compacted")) {
          crashed = true;
          throw new Error("the process died");
        }
        return appended;
      },
    };
    const first = reader(steps);
    await t
      .agent({ model: first, tools: [fetchPage], store: dying, contextWindow })
      .run(task, { runId: "run_crash" });
    const log: StoredEvent[] = await durable.read("run_crash");
    t.check("crashed_after_compaction", crashed && log.at(-1)?.type === "context-compacted");
    const second = reader(steps);
    const resumed = await t
      .agent({ model: second, tools: [fetchPage], store: durable, contextWindow })
      .resume("run_crash");
    t.check("resumed_completes", resumed.status === "completed", resumed.status);
    const sent = first.requests.length;
    const expected = JSON.stringify(reference.requests.slice(sent));
    t.check(
      "same_next_requests",
      second.requests.length >= 5 && JSON.stringify(second.requests) === expected,
      `${second.requests.length} requests after the resume`,
    );
  },
);
