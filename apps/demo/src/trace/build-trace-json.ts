import { InvalidArgumentError, type Span, type StoredEvent } from "@loopguard/core";
import { spansFromEvents } from "@loopguard/core/plugin";

/** What the viewer shows about the run besides its spans. */
export interface TraceMeta {
  runId: string;
  /** A title for the page; default `loopguard trace <runId>`. */
  title?: string;
  agentId?: string;
  model?: string;
  /** `completed`, `stopped`, `halted`, `failed`, `awaiting_approval`, `running`. */
  status?: string;
  /** Why the run ended (`end_turn`, `budget`, ...). */
  why?: string;
  task?: string;
  /** When the file was made (ms since the epoch); default now. */
  generatedAt?: number;
  /** The run that delegated to this one (a child run's page links up to it). */
  parent?: TraceRunLink;
  /** Every run below this one in the trace, in tree order (see `buildTraceTree`). */
  children?: TraceRunLink[];
}

/** A run of a delegation tree as the viewer links it. */
export interface TraceRunLink {
  runId: string;
  /** Where the page links to: a relative path (`../id/trace.html`) or an absolute one (`/runs/id`). */
  href: string;
  /** The parent's tool that started it (absent for the parent link). */
  tool?: string;
  agentId?: string;
  status?: string;
  /** Levels below the run the page is about (1 = its direct child). */
  level?: number;
}

/** A run's trace as the viewer takes it: spans plus what the page says about the run. */
export interface TraceJson {
  spans: Span[];
  meta: TraceMeta;
}

/**
 * Builds the trace of a stored run from its events (through core's `spansFromEvents`), ready
 * for `renderTraceHtml(trace.spans, trace.meta)`. Pass `redact` when the log holds raw
 * content: the page shows task, arguments, results and answers.
 *
 * @example
 * const trace = buildTraceJson(await store.read(runId), { redact });
 * await writeFile("trace.html", renderTraceHtml(trace.spans, trace.meta));
 */
export function buildTraceJson(
  events: readonly StoredEvent[],
  options: { redact?: (value: unknown) => unknown } = {},
): TraceJson {
  if (!Array.isArray(events))
    throw new InvalidArgumentError(
      "[loopguard] buildTraceJson(events): events must be the array a store's read(runId) returns",
    );
  const start = events[0];
  if (start?.type !== "run-start") {
    throw new InvalidArgumentError(
      `[loopguard] buildTraceJson: a run's log starts with a run-start event, got ${start ? start.type : "no events"}; read the run with store.read(runId)`,
    );
  }
  if (options.redact !== undefined && typeof options.redact !== "function")
    throw new InvalidArgumentError("[loopguard] buildTraceJson: redact must be a function");
  let spans = spansFromEvents(events);
  const end = [...events].reverse().find((event) => event.type === "run-end");
  const meta: TraceMeta = {
    runId: start.runId,
    agentId: start.agentId,
    model: start.model,
    status: end?.type === "run-end" ? end.status : "running",
    ...(end?.type === "run-end" ? { why: end.why } : {}),
    task: start.task,
  };
  if (options.redact) {
    const redact = options.redact;
    spans = spans.map((span) => redact(span) as Span);
    if (meta.task !== undefined) meta.task = String(redact(meta.task));
  }
  return { spans, meta };
}
