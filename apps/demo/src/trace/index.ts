export type { TraceJson, TraceMeta, TraceRunLink } from "./build-trace-json.js";
export { buildTraceJson } from "./build-trace-json.js";
export type { TraceTreeOptions } from "./build-trace-tree.js";
export { buildTraceTree } from "./build-trace-tree.js";
export { embedJson, renderTraceHtml } from "./render-trace-html.js";
export type { TraceTotals, ViewSpan } from "./trace-view.js";
export { traceView } from "./trace-view.js";
