import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Span, StoredEvent } from "@loopguard/core";
import { spansFromEvents } from "@loopguard/core/plugin";
import { supportDefences } from "@loopguard/evals";
import type { Command } from "commander";
import { type CliShared, pathsOf, withDir } from "../cli-context.js";
import { demoAgent } from "../demo-agent.js";
import { buildTraceTree, renderTraceHtml } from "../trace/index.js";
import { traceViewer } from "../trace-viewer.js";
import { UsageError } from "../usage-error.js";

/**
 * `loopguard trace <runId>`: writes a run's redacted spans as trace.json and trace.html, or
 * with `--format otlp` as trace.otlp.json (OTLP/JSON, for Jaeger's upload or a collector).
 */
export function register(program: Command, { out, colors }: CliShared): void {
  withDir(
    program
      .command("trace")
      .description("write a run's spans (redacted) as trace.json and a single-file trace.html")
      .argument("<runId>", "the run to trace (see: loopguard runs)")
      .option("--out <dir>", "where to write (default: <dir>/../traces/<runId>)")
      .option(
        "--format <format>",
        "html: trace.json and trace.html; otlp: trace.otlp.json (OTLP/JSON: Jaeger's upload, or POST to a collector's /v1/traces)",
        "html",
      ),
  ).action(async (runId: string, options: { dir: string; out?: string; format: string }) => {
    if (options.format !== "html" && options.format !== "otlp")
      throw new UsageError(`--format takes html or otlp, got ${JSON.stringify(options.format)}`);
    const paths = pathsOf(options);
    const demo = await demoAgent({ paths });
    const events = await demo.store.read(runId);
    if (events.length === 0)
      throw new UsageError(
        `run ${runId} not found in ${paths.runs}; list runs with: loopguard runs`,
      );
    const redact = supportDefences(demo.packages).redact;
    // Content, names and attributes are redacted; ids are not (a phone-number rule would
    // otherwise read a run of digits in a hex span id as a number to hide).
    const spans = spansFromEvents(events).map(
      (span): Span => ({
        ...(redact(span) as Span),
        traceId: span.traceId,
        spanId: span.spanId,
        ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
      }),
    );
    const dir = resolve(options.out ?? join(paths.runs, "..", "traces", runId));
    // Traces hold the run's (redacted) content: private to the user who wrote them.
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (options.format === "otlp") {
      const { otlpJsonOf } = await import("@loopguard/tracing-otel");
      const file = join(dir, "trace.otlp.json");
      writeFileSync(
        file,
        `${JSON.stringify(otlpJsonOf(spans, { serviceName: "loopguard-demo" }))}\n`,
        {
          mode: 0o600,
        },
      );
      out(`wrote ${file} (${spans.length} spans, OTLP/JSON)`);
      out(
        colors.dim(
          `open it in Jaeger (Search, Upload), or send it to a collector: curl -H 'content-type: application/json' --data-binary @${file} http://localhost:4318/v1/traces`,
        ),
      );
      return;
    }
    const viewer = traceViewer;
    const json = viewer.buildTraceJson(events.map((event) => redact(event)));
    writeFileSync(join(dir, "trace.json"), `${JSON.stringify(json, null, 2)}\n`, { mode: 0o600 });
    out(`wrote ${join(dir, "trace.json")} (${spans.length} spans)`);
    // The page shows the run's real status (from the log) and, for a delegating run, every
    // run below it nested under the call that started it, with links between the pages.
    // Each log is read once, however many pages of the tree show it.
    const logs = new Map<string, Promise<readonly StoredEvent[]>>();
    const read = (id: string) => {
      let log = logs.get(id);
      if (!log) {
        log = demo.store.read(id);
        logs.set(id, log);
      }
      return log;
    };
    const tree = await buildTraceTree(read, runId, { redact });
    writeFileSync(join(dir, "trace.html"), renderTraceHtml(tree.spans, tree.meta), {
      mode: 0o600,
    });
    for (const child of tree.meta.children ?? []) {
      if (child.status === "missing") continue;
      const childDir = join(dir, "..", child.runId);
      mkdirSync(childDir, { recursive: true, mode: 0o700 });
      const childTree = await buildTraceTree(read, child.runId, { redact });
      writeFileSync(
        join(childDir, "trace.html"),
        renderTraceHtml(childTree.spans, childTree.meta),
        { mode: 0o600 },
      );
    }
    const below = tree.meta.children?.length ?? 0;
    if (below > 0)
      out(
        `wrote the trace pages of the ${below} run${below === 1 ? "" : "s"} it delegated to beside it`,
      );
    if (tree.meta.parent)
      out(
        colors.dim(
          `it ran for ${tree.meta.parent.runId}; trace that run with: loopguard trace ${tree.meta.parent.runId}`,
        ),
      );
    out(
      `wrote ${join(dir, "trace.html")} (open it in a browser; it loads nothing from the network)`,
    );
  });
}
