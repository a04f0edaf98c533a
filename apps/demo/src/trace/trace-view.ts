import type { AttributeValue, Span } from "@loopguard/core";

/** One span as the page draws it: times relative to the run's start, figures rolled up. */
export interface ViewSpan {
  id: string;
  parent: string | null;
  depth: number;
  name: string;
  kind: Span["kind"];
  /** Milliseconds from the start of the trace. */
  start: number;
  durationMs: number;
  status: Span["status"];
  statusMessage?: string;
  /** This span's own model cost (model spans). */
  costUsd: number;
  /** Input tokens, cache reads and writes included; output tokens (own, model spans). */
  inputTokens: number;
  outputTokens: number;
  /** Cost and tokens of the span and everything under it. */
  total: { costUsd: number; inputTokens: number; outputTokens: number };
  blocked: boolean;
  blockReason?: string;
  /** `suspicious` or `injection` when a scanner flagged the tool's output. */
  flagged?: string;
  attributes: Record<string, AttributeValue>;
  events: Array<{ name: string; offsetMs: number; attributes: Record<string, AttributeValue> }>;
  content?: { input?: unknown; output?: unknown };
}

/** Figures for the whole run, shown at the top of the page. */
export interface TraceTotals {
  durationMs: number;
  costUsd: number;
  /** Every input token, cache reads and writes included. */
  inputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  outputTokens: number;
  modelCalls: number;
  toolCalls: number;
  blocked: number;
  flagged: number;
  errors: number;
}

const num = (value: AttributeValue | undefined) =>
  typeof value === "number" && Number.isFinite(value) ? value : 0;

/**
 * Turns spans into the rows the viewer draws, in tree order (parents first, siblings by start
 * time), with totals. Spans whose parent is missing become roots, so nothing is hidden.
 */
export function traceView(spans: readonly Span[]): {
  rows: ViewSpan[];
  totals: TraceTotals;
  startedAt: number;
} {
  const startedAt = spans.length === 0 ? 0 : Math.min(...spans.map((span) => span.startTime));
  const endedAt = spans.length === 0 ? 0 : Math.max(...spans.map((span) => span.endTime));
  const ids = new Set(spans.map((span) => span.spanId));
  const children = new Map<string | null, Span[]>();
  for (const span of spans) {
    const parent =
      span.parentSpanId && ids.has(span.parentSpanId) && span.parentSpanId !== span.spanId
        ? span.parentSpanId
        : null;
    const list = children.get(parent) ?? [];
    list.push(span);
    children.set(parent, list);
  }
  for (const list of children.values()) list.sort((a, b) => a.startTime - b.startTime);

  const totals: TraceTotals = {
    durationMs: endedAt - startedAt,
    costUsd: 0,
    inputTokens: 0,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    outputTokens: 0,
    modelCalls: 0,
    toolCalls: 0,
    blocked: 0,
    flagged: 0,
    errors: 0,
  };
  const rows: ViewSpan[] = [];
  const seen = new Set<string>();
  const visit = (span: Span, parent: string | null, depth: number): ViewSpan["total"] => {
    seen.add(span.spanId);
    const attributes = span.attributes;
    const cacheRead = num(attributes["loopguard.usage.cache_read_tokens"]);
    const cacheWrite = num(attributes["loopguard.usage.cache_write_tokens"]);
    const inputTokens =
      span.kind === "model"
        ? num(attributes["loopguard.usage.input_tokens"]) + cacheRead + cacheWrite
        : 0;
    const outputTokens =
      span.kind === "model" ? num(attributes["loopguard.usage.output_tokens"]) : 0;
    const costUsd = span.kind === "model" ? num(attributes["loopguard.cost_usd"]) : 0;
    const verdict = attributes["loopguard.injection.verdict"];
    const flagged = typeof verdict === "string" && verdict !== "clean" ? verdict : undefined;
    const blocked = attributes["loopguard.blocked"] === true;
    if (span.kind === "model") {
      totals.modelCalls += 1;
      totals.costUsd += costUsd;
      totals.inputTokens += inputTokens;
      totals.cacheReadTokens += cacheRead;
      totals.cacheWriteTokens += cacheWrite;
      totals.outputTokens += outputTokens;
    }
    if (span.kind === "tool") totals.toolCalls += 1;
    if (blocked) totals.blocked += 1;
    if (flagged) totals.flagged += 1;
    if (span.status === "error" && !blocked) totals.errors += 1;
    const row: ViewSpan = {
      id: span.spanId,
      parent,
      depth,
      name: span.name,
      kind: span.kind,
      start: span.startTime - startedAt,
      durationMs: Math.max(0, span.endTime - span.startTime),
      status: span.status,
      ...(span.statusMessage ? { statusMessage: span.statusMessage } : {}),
      costUsd,
      inputTokens,
      outputTokens,
      total: { costUsd, inputTokens, outputTokens },
      blocked,
      ...(typeof attributes["loopguard.block.reason"] === "string"
        ? { blockReason: attributes["loopguard.block.reason"] }
        : {}),
      ...(flagged ? { flagged } : {}),
      attributes,
      events: span.events.map((event) => ({
        name: event.name,
        offsetMs: event.time - startedAt,
        attributes: event.attributes,
      })),
      ...(span.content ? { content: span.content } : {}),
    };
    rows.push(row);
    for (const child of children.get(span.spanId) ?? []) {
      if (seen.has(child.spanId)) continue;
      const sub = visit(child, span.spanId, depth + 1);
      row.total.costUsd += sub.costUsd;
      row.total.inputTokens += sub.inputTokens;
      row.total.outputTokens += sub.outputTokens;
    }
    return row.total;
  };
  for (const root of children.get(null) ?? []) visit(root, null, 0);
  // A cycle in malformed input leaves spans unvisited: show them as roots.
  for (const span of spans) if (!seen.has(span.spanId)) visit(span, null, 0);
  return { rows, totals, startedAt };
}
