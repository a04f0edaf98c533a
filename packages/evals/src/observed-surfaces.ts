import type { EventStore, Span, StoredEvent } from "@loopguard/core";
import { spansFromEvents } from "@loopguard/core/plugin";
import type { RecordingExporter } from "@loopguard/core/testing";

/** Everything a scenario exposed to observability: what an operator or a vendor could read. */
export interface ObservedSurfaces {
  /** Spans given to exporters (already redacted by the agent). */
  exporters: RecordingExporter[];
  /** Events streamed to the host through `onEvent` (redacted). */
  events: StoredEvent[];
  /** Log lines (redacted at write time). */
  logs: string[];
  /** Stores whose event logs are scanned as stored, and rebuilt into traces with `spansFromEvents` and redacted. */
  stores: Array<{
    store: EventStore;
    runIds: Set<string>;
    all: boolean;
    redact: (value: unknown) => unknown;
  }>;
  /** The fixtures' PII and secrets that must appear on none of the surfaces. */
  sensitive: string[];
  /** Extra rendered artefacts (e.g. the HTML trace) by name. */
  artefacts: Map<string, string>;
}

/** An empty set of observed surfaces. */
export function observedSurfaces(): ObservedSurfaces {
  return { exporters: [], events: [], logs: [], stores: [], sensitive: [], artefacts: new Map() };
}

/** A leak: a sensitive string found on a surface. */
export interface Leak {
  surface: string;
  value: string;
}

/** Renders a run's trace as an artefact (the HTML viewer), for the leak scan. */
export type TraceRenderer = (spans: Span[], meta: { runId: string }) => string;

/**
 * Scans every surface for the fixtures' sensitive strings (exact, case-insensitive, card
 * numbers with and without spaces): exported spans, streamed events, logs, each stored event
 * log exactly as stored (the vault keeps PII out of it), traces rebuilt from each store with
 * `spansFromEvents` (redacted as the CLI does), their HTML rendering and other artefacts.
 * Returns what leaked, with where.
 */
export async function findLeaks(
  surfaces: ObservedSurfaces,
  renderTrace?: TraceRenderer,
): Promise<Leak[]> {
  const needles = [...new Set(surfaces.sensitive)].map((value) => ({
    value,
    lower: value.toLowerCase(),
  }));
  const leaks: Leak[] = [];
  const scan = (surface: string, text: string) => {
    const lower = text.toLowerCase();
    for (const needle of needles)
      if (lower.includes(needle.lower)) leaks.push({ surface, value: needle.value });
  };
  for (const [index, exporter] of surfaces.exporters.entries())
    scan(`exporter #${index + 1} spans`, JSON.stringify(exporter.spans));
  scan("onEvent stream", JSON.stringify(surfaces.events));
  scan("logs", surfaces.logs.join("\n"));
  for (const entry of surfaces.stores) {
    const runIds = entry.all
      ? (await entry.store.list()).map((summary) => summary.runId)
      : [...entry.runIds];
    for (const runId of runIds) {
      const events = await entry.store.read(runId);
      scan(`event log of ${runId}`, JSON.stringify(events));
      const spans = spansFromEvents(events).map((span) => entry.redact(span) as Span);
      scan(`trace of ${runId}`, JSON.stringify(spans));
      if (renderTrace) scan(`HTML trace of ${runId}`, renderTrace(spans, { runId }));
    }
  }
  for (const [name, text] of surfaces.artefacts) scan(name, text);
  return leaks;
}
