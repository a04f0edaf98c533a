export type { TraceJson, TraceMeta } from "./build-trace-json.js";
export { buildTraceJson } from "./build-trace-json.js";
export { embedJson, renderTraceHtml } from "./render-trace-html.js";
export type { TraceTotals, ViewSpan } from "./trace-view.js";
export { traceView } from "./trace-view.js";
