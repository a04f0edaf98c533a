import { randomBytes } from "node:crypto";
import type { IdGenerator } from "@opentelemetry/sdk-trace-base";

/**
 * The ids the next `startSpan` must use. `startSpan` is synchronous, so the exporter sets the
 * slot, starts one span and clears it, with nothing else able to run in between.
 */
const pending: { traceId?: string; spanId?: string } = {};

/** Runs `start` with the ids the generator must hand out, then clears them. */
export function withPendingIds<T>(traceId: string, spanId: string, start: () => T): T {
  pending.traceId = traceId;
  pending.spanId = spanId;
  try {
    return start();
  } finally {
    delete pending.traceId;
    delete pending.spanId;
  }
}

/**
 * An OpenTelemetry IdGenerator that gives loopguard's spans the ids core derived from the run
 * id (so a trace rebuilt from the log has the same ids as the live one) and random ids to
 * every other span.
 *
 * `otelExporter` installs it in the tracer provider it builds. Pass it to your own provider
 * when you give `otelExporter` a `tracerProvider`, or the exporter falls back to remapping ids.
 *
 * @example
 * const provider = new BasicTracerProvider({ idGenerator: loopguardIdGenerator(), spanProcessors: [processor] });
 * const exporter = otelExporter({ tracerProvider: provider });
 */
export function loopguardIdGenerator(): IdGenerator {
  return {
    generateTraceId() {
      return pending.traceId ?? randomHex(16);
    },
    generateSpanId() {
      return pending.spanId ?? randomHex(8);
    },
  };
}

function randomHex(bytes: number): string {
  for (;;) {
    const id = randomBytes(bytes).toString("hex");
    // All-zero ids are invalid in OpenTelemetry.
    if (/[^0]/.test(id)) return id;
  }
}
