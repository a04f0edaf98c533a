import { InvalidArgumentError, type Span, type StoredEvent } from "@loopguard/core";
import { spansFromEvents } from "@loopguard/core/plugin";
import { runLinksOf } from "../run-links.js";
import { buildTraceJson, type TraceMeta, type TraceRunLink } from "./build-trace-json.js";

/** Options of `buildTraceTree`. */
export interface TraceTreeOptions {
  /** Redacts spans and the task (ids are kept: a rule must not read a hex id as a number). */
  redact?: (value: unknown) => unknown;
  /** The link of a run (default `../<runId>/trace.html`, the CLI's traces directory). */
  href?: (runId: string) => string;
  /** The most runs read (default 200); the rest are left out and counted in `meta.truncated`. */
  maxRuns?: number;
}

const defaultHref = (runId: string) => `../${encodeURIComponent(runId)}/trace.html`;

/**
 * Builds the trace of a run and every run it delegated to (read through `child-run-start`
 * in each log, breadth first): one list of spans in which a child's run span hangs under the
 * parent's `execute_tool` span that started it, plus links to the parent run and the children.
 * A child whose span does not name that parent (a log from before the link was traced) is
 * attached to the call its parent's log names; a child whose log is missing is listed with
 * status `missing`.
 *
 * @example
 * const trace = await buildTraceTree((id) => store.read(id), runId, { redact });
 * await writeFile("trace.html", renderTraceHtml(trace.spans, trace.meta));
 */
export async function buildTraceTree(
  read: (runId: string) => Promise<readonly StoredEvent[]>,
  runId: string,
  options: TraceTreeOptions = {},
): Promise<{ spans: Span[]; meta: TraceMeta; truncated: number }> {
  if (typeof read !== "function")
    throw new InvalidArgumentError(
      "[loopguard] buildTraceTree(read, runId): read must be a function such as (id) => store.read(id)",
    );
  if (typeof runId !== "string" || runId === "")
    throw new InvalidArgumentError("[loopguard] buildTraceTree: runId must be a run's id");
  const href = options.href ?? defaultHref;
  const maxRuns = options.maxRuns ?? 200;
  if (!Number.isInteger(maxRuns) || maxRuns < 1)
    throw new InvalidArgumentError(
      `[loopguard] buildTraceTree: maxRuns must be a whole number >= 1, got ${String(maxRuns)}`,
    );
  const root = await read(runId);
  const trace = buildTraceJson(root);
  const rootLinks = runLinksOf(root);
  const spans: Span[] = [...spansFromEvents(root)];
  const meta: TraceMeta = { ...trace.meta, children: [] };
  if (rootLinks.parent)
    meta.parent = { runId: rootLinks.parent.runId, href: href(rootLinks.parent.runId) };
  const seen = new Set([runId]);
  const queue = rootLinks.children.map((child) => ({ child, level: 1 }));
  let truncated = 0;
  while (queue.length > 0) {
    const { child, level } = queue.shift()!;
    if (seen.has(child.runId)) continue;
    if (seen.size >= maxRuns) {
      truncated += 1;
      continue;
    }
    seen.add(child.runId);
    const events = await read(child.runId);
    const listed: TraceRunLink = {
      runId: child.runId,
      href: href(child.runId),
      tool: child.tool,
      ...(child.agentId ? { agentId: child.agentId } : {}),
      status: events.length === 0 ? "missing" : child.status,
      level,
    };
    meta.children!.push(listed);
    if (events.length === 0 || events[0]?.type !== "run-start") continue;
    const end = [...events].reverse().find((event) => event.type === "run-end");
    if (end?.type === "run-end") listed.status = end.status;
    const childSpans = spansFromEvents(events);
    attachToCall(childSpans, spans, child.callId);
    spans.push(...childSpans);
    for (const grandchild of runLinksOf(events).children)
      queue.push({ child: grandchild, level: level + 1 });
  }
  const redact = options.redact;
  const shown = redact
    ? spans.map(
        (span): Span => ({
          ...(redact(span) as Span),
          traceId: span.traceId,
          spanId: span.spanId,
          ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
        }),
      )
    : spans;
  if (redact && meta.task !== undefined) meta.task = String(redact(meta.task));
  return { spans: shown, meta, truncated };
}

/**
 * Hangs a child's run span under the parent's `execute_tool` span of `callId` when the child's
 * span names no parent among the spans read so far.
 */
function attachToCall(childSpans: Span[], known: readonly Span[], callId: string): void {
  const runSpan = childSpans.find((span) => span.kind === "run");
  if (!runSpan || callId === "") return;
  const ids = new Set(known.map((span) => span.spanId));
  if (runSpan.parentSpanId && ids.has(runSpan.parentSpanId)) return;
  const call = known.find(
    (span) => span.kind === "tool" && span.attributes["loopguard.tool.call_id"] === callId,
  );
  if (call) runSpan.parentSpanId = call.spanId;
}
