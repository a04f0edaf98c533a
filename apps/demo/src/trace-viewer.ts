import type { Span, StoredEvent } from "@loopguard/core";

/** The HTML viewer's entry points (apps/demo/src/trace, written separately). */
export interface TraceViewer {
  renderTraceHtml(spans: Span[], meta: { runId: string }): string;
  buildTraceJson(events: unknown[]): unknown;
}

/** Loads the HTML trace viewer when it is part of this build; `undefined` otherwise. */
export async function loadTraceViewer(): Promise<TraceViewer | undefined> {
  const specifier = "./trace/index.js";
  try {
    const loaded = (await import(specifier)) as Partial<TraceViewer>;
    if (typeof loaded.renderTraceHtml === "function" && typeof loaded.buildTraceJson === "function")
      return loaded as TraceViewer;
  } catch {
    // Not built yet: callers say so and skip the HTML.
  }
  return undefined;
}

export type { StoredEvent };
