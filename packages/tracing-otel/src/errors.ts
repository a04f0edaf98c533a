import { LoopguardError } from "@loopguard/core";

/** An `OTEL_*` variable or an OTLP option holds a value that cannot be used. */
export class OtlpConfigError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.OtlpConfigError";
  /** The variable or option at fault, e.g. `OTEL_EXPORTER_OTLP_ENDPOINT`. */
  readonly setting: string;
  constructor(setting: string, message: string, options?: { cause?: unknown }) {
    super("otlp_config", message, options);
    this.setting = setting;
  }
}

/** Spans could not be delivered to the OpenTelemetry exporter or processor. */
export class TraceExportError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.TraceExportError";
  /** How many spans the failed export carried. */
  readonly spanCount: number;
  constructor(spanCount: number, message: string, options?: { cause?: unknown }) {
    super("trace_export_failed", message, options);
    this.spanCount = spanCount;
  }
}
