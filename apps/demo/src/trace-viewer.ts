import type { Span, StoredEvent } from "@loopguard/core";
import { buildTraceJson, renderTraceHtml } from "./trace/index.js";

/** The HTML trace viewer's entry points (apps/demo/src/trace), as the commands and the inbox use them. */
export interface TraceViewer {
  renderTraceHtml(spans: Span[], meta: { runId: string }): string;
  buildTraceJson(events: unknown[]): unknown;
}

/** The HTML trace viewer: a self-contained page of a run's spans, and the JSON it embeds. */
export const traceViewer: TraceViewer = {
  renderTraceHtml: (spans, meta) =>
    renderTraceHtml(spans, meta as Parameters<typeof renderTraceHtml>[1]),
  buildTraceJson: (events) => buildTraceJson(events as Parameters<typeof buildTraceJson>[0]),
};

export type { StoredEvent };
