import type { ResolvedAgentOptions } from "./agent-options.js";
import { type AgentStreamSink, streamEventsOf } from "./agent-stream.js";
import { serverContextEditsOf } from "./context-window-options.js";
import type { EventStore } from "./contracts/event-store.js";
import type { Gate } from "./contracts/gate.js";
import { digestOf } from "./digest.js";
import { InvalidArgumentError, RunNotFoundError } from "./errors.js";
import type { RunParent } from "./events.js";
import { foldLog } from "./fold-stream.js";
import type { ModelStepContext } from "./model-step.js";
import { policyDigestOf, sortGates } from "./pipeline.js";
import { priceOf } from "./pricing.js";
import { resolveRetryOptions } from "./retry.js";
import { runBudgetHooks } from "./run-budgets.js";
import { type Lineage, lineageOf } from "./run-state.js";
import { Telemetry } from "./run-telemetry.js";
import { RunWriter, type RunWriterOptions } from "./run-writer.js";
import type { SpanBuilder } from "./spans.js";
import { ToolCallPath } from "./tool-call.js";
import type { ToolTurnContext } from "./tool-turn.js";

/** Everything the loop of one agent needs, fixed when the agent is made. */
export interface LoopContext extends ModelStepContext, ToolTurnContext {
  config: ResolvedAgentOptions;
  store: EventStore;
  telemetry: Telemetry;
  policyDigest: string;
  toolDigest: string;
  maxTokensDefault: number;
  /** Every gate of the pipeline, sorted by step (a child run's also holds its ancestors'). */
  gates: readonly Gate[];
}

/** Builds an agent's loop context from its checked options: gates sorted, digests, the call path, telemetry. */
export function loopContext(config: ResolvedAgentOptions): LoopContext {
  const { model } = config;
  const gates = sortGates(config.gates);
  const policyDigest = policyDigestOf(gates, config.haltOn);
  const toolSpecs = config.tools.map((item) => item.spec);
  const now = config.now ?? Date.now;
  const reportError = (error: unknown, where: string) => {
    try {
      config.onError?.(error, where);
    } catch {
      // onError itself failed: there is nowhere left to report to.
    }
  };
  return {
    config,
    store: config.store,
    model,
    price: priceOf(model.model, config.prices),
    system: config.system,
    toolSpecs,
    fixedBytes: Buffer.byteLength(
      JSON.stringify({ system: config.system ?? "", tools: toolSpecs }),
    ),
    retry: resolveRetryOptions(config.retry),
    runBudgets: runBudgetHooks(config.budgets, config.store, now),
    now,
    reportError,
    tools: new Map(config.tools.map((item) => [item.name, item])),
    vault: config.vault,
    serverEdits: serverContextEditsOf(config.contextWindow),
    path: new ToolCallPath({
      gates,
      haltOn: config.haltOn,
      policyDigest,
      approval: { approver: config.approver, ...config.approval },
      breaker: config.breaker,
      scanner: config.scanner,
      envelope: config.envelope,
      vault: config.vault,
      toolRetry: config.toolRetry,
      maxOutputChars: config.maxOutputChars,
      outputLog: config.outputLog,
      now,
      reportError,
    }),
    telemetry: new Telemetry({
      exporters: config.exporters,
      redact: config.redact,
      onEvent: config.onEvent,
      reportError,
      queue: config.exportQueue,
    }),
    policyDigest,
    gates,
    toolDigest: digestOf(toolSpecs),
    maxTokensDefault: config.maxTokens ?? model.defaultMaxTokens ?? 4096,
    streaming: streamingSettings(config),
  };
}

/** What streamed text passes through before the host sees it: the vault, then the redactor. */
function streamingSettings(config: ResolvedAgentOptions): ModelStepContext["streaming"] {
  const { vault, redact } = config;
  const transforms: Array<(text: string) => string> = [];
  if (vault) transforms.push((text) => vault.tokenize(text));
  if (redact)
    transforms.push((text) => {
      const out = redact(text);
      return typeof out === "string" ? out : String(out);
    });
  return {
    idleTimeoutMs: config.idleTimeoutMs,
    streamHoldBack: config.streamHoldBack,
    transforms,
    redactStream: config.redactStream,
    redact,
  };
}

/** The writer options of one run: the clock, the vault's reveal, and what each durable event feeds (spans, the host's stream). */
export function writerOptions(
  loop: LoopContext,
  runId: string,
  sink?: AgentStreamSink,
  parentSpanId?: string,
): { options: RunWriterOptions; spans: SpanBuilder | undefined } {
  const telemetry = loop.telemetry.forRun(runId, { parentSpanId });
  const vault = loop.vault;
  const applied = telemetry.onApplied;
  const redact = loop.config.redact;
  // The host's stream gets the durable events it shows (decisions, results, step ends).
  const onApplied: NonNullable<RunWriterOptions["onApplied"]> = sink
    ? (event, fold) => {
        applied(event, fold);
        try {
          for (const streamed of streamEventsOf(runId, event, redact)) sink.push(streamed);
        } catch (error) {
          loop.reportError(error, "agent.stream");
        }
      }
    : applied;
  return {
    spans: telemetry.spans,
    options: {
      now: loop.now,
      ...(vault ? { reveal: (text: string) => vault.reveal(text) } : {}),
      onApplied,
    },
  };
}

/** Reads a stored run and returns a writer positioned after its last event. */
export async function open(
  loop: LoopContext,
  runId: string,
  sink?: AgentStreamSink,
  parentSpanId?: string,
  lineage?: Lineage,
): Promise<RunWriter> {
  const { store } = loop;
  if (typeof runId !== "string" || runId.trim() === "")
    throw new InvalidArgumentError("[core] resume(runId): runId must be a non-empty string");
  const where = `run ${runId} (${store.name} store)`;
  const { options, spans } = writerOptions(loop, runId, sink, parentSpanId);
  const reveal = options.reveal ? { reveal: options.reveal } : {};
  // Streamed and folded in slices that yield, so a long log never holds the event loop. The
  // span builder replays the log too, so spans left open by the last process end (and are
  // exported once) when this one appends its run-resume.
  const folded = await foldLog(
    store,
    runId,
    where,
    reveal,
    spans ? (event, fold) => spans.push(event, fold.messages) : undefined,
  );
  if (!folded) throw new RunNotFoundError(runId, `the ${store.name} event store`);
  const parent = folded.fold.start.parent;
  if (parent)
    folded.fold.state.inherit(
      lineage ?? (await storedLineage(store, parent, folded.fold.start.task, options.reveal)),
    );
  return new RunWriter(store, runId, folded.events, options, folded.fold);
}

/**
 * A child run's lineage read from its ancestors' logs (a child resumed alone). When the
 * parent's log cannot be read, the child's task itself stands as an untrusted output: its
 * values are then untrusted (fail closed), never the user's.
 */
async function storedLineage(
  store: EventStore,
  parent: RunParent,
  childTask: string,
  reveal: ((text: string) => string) | undefined,
  depth = 0,
): Promise<Lineage> {
  const where = `run ${parent.runId} (${store.name} store)`;
  let folded: Awaited<ReturnType<typeof foldLog>>;
  try {
    folded =
      depth < 32 ? await foldLog(store, parent.runId, where, reveal ? { reveal } : {}) : undefined;
  } catch {
    folded = undefined;
  }
  if (!folded)
    return {
      task: undefined,
      outputs: [
        {
          tool: parent.tool,
          toolUseId: parent.callId,
          text: reveal ? reveal(childTask) : childTask,
          trust: "untrusted",
        },
      ],
      calls: [],
    };
  const grand = folded.fold.start.parent;
  if (grand)
    folded.fold.state.inherit(
      await storedLineage(store, grand, folded.fold.start.task, reveal, depth + 1),
    );
  return lineageOf(folded.fold.state, parent.callId);
}
