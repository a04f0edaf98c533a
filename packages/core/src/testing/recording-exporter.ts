import type { Exporter, ExportResult } from "../contracts/exporter.js";
import type { Span } from "../spans.js";

/** An exporter that keeps every span it is given, for tests. */
export interface RecordingExporter extends Exporter {
  readonly spans: Span[];
  readonly shutdowns: number;
}

/**
 * Records spans in memory. With `fail: true` every export fails (to test that exporters fail
 * open).
 *
 * @example
 * const exporter = recordingExporter();
 * const agent = createAgent({ model, tools, exporters: [exporter] });
 */
export function recordingExporter(options: { fail?: boolean | "throw" } = {}): RecordingExporter {
  const spans: Span[] = [];
  let shutdowns = 0;
  return {
    name: "recording",
    spans,
    get shutdowns() {
      return shutdowns;
    },
    export(batch): ExportResult {
      if (options.fail === "throw") throw new Error("recording exporter: export threw");
      if (options.fail)
        return { code: "failed", error: new Error("recording exporter: export failed") };
      spans.push(...structuredClone(batch));
      return { code: "success" };
    },
    async forceFlush() {},
    async shutdown() {
      shutdowns += 1;
    },
  };
}
