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
import { type Lineage, lineageOf, type RunState } from "./run-state.js";
import { Telemetry } from "./run-telemetry.js";
import { RunWriter, type RunWriterOptions } from "./run-writer.js";
import type { SpanBuilder } from "./spans.js";
import { ToolCallPath } from "./tool-call.js";
import type { ToolTurnContext } from "./tool-turn.js";
import { spliceStoredDescendants, type TreeReadOptions } from "./tree-history.js";

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
  treeParent?: RunState,
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
  // The tree below the run, as its gates saw it before the crash (before `inherit` shifts it).
  const tree = { reveal: options.reveal, reportError: loop.reportError };
  await spliceStoredDescendants(store, folded.fold, tree);
  const parent = folded.fold.start.parent;
  const state = folded.fold.state;
  if (parent) {
    if (lineage) state.inherit(lineage);
    else {
      // Resumed alone (a worker): the ancestors' states are read from their logs.
      const above = await storedAncestors(store, parent, folded.fold.start.task, tree);
      state.inherit(above.lineage);
      if (above.state) state.linkTreeParent(above.state);
      folded.fold.withdrawn = above.withdrawn;
    }
    if (treeParent) state.linkTreeParent(treeParent);
  }
  return new RunWriter(store, runId, folded.events, options, folded.fold);
}

/**
 * A child run's lineage and its parent's state, read from its ancestors' logs (a child resumed
 * alone): each ancestor's state holds its own history, its descendants' (this child's siblings
 * and this child's history so far included) and its lineage, linked to its own parent's, so the
 * ancestors' gates judge the child with their view of the tree as stored. When the parent's log
 * cannot be read, the child's task itself stands as an untrusted output: its values are then
 * untrusted (fail closed), never the user's; no parent state is linked.
 */
async function storedAncestors(
  store: EventStore,
  parent: RunParent,
  childTask: string,
  tree: TreeReadOptions,
  depth = 0,
): Promise<{ lineage: Lineage; state?: RunState; withdrawn?: string }> {
  const where = `run ${parent.runId} (${store.name} store)`;
  const reveal = tree.reveal;
  let folded: Awaited<ReturnType<typeof foldLog>>;
  try {
    folded =
      depth < 32 ? await foldLog(store, parent.runId, where, reveal ? { reveal } : {}) : undefined;
    if (folded) await spliceStoredDescendants(store, folded.fold, tree);
  } catch {
    folded = undefined;
  }
  if (!folded)
    return {
      lineage: {
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
      },
    };
  const state = folded.fold.state;
  const grand = folded.fold.start.parent;
  if (grand) {
    const above = await storedAncestors(store, grand, folded.fold.start.task, tree, depth + 1);
    state.inherit(above.lineage);
    if (above.state) state.linkTreeParent(above.state);
  }
  // The parent no longer waits for this call (it recorded an outcome for it, or ended).
  const turn = folded.fold.pendingTurn;
  const waiting =
    !folded.fold.end &&
    turn !== undefined &&
    !turn.results.has(parent.callId) &&
    turn.toolUses.some((use) => use.id === parent.callId);
  return {
    lineage: lineageOf(state, parent.callId),
    state,
    ...(waiting
      ? {}
      : {
          withdrawn: folded.fold.end
            ? `its parent run ${parent.runId} has ended`
            : `its parent run ${parent.runId} already recorded an outcome for call ${parent.callId}`,
        }),
  };
}
