import type { StoredEvent } from "@loopguard/core";
import { type ChildLink, type ParentLink, runLinksOf } from "../run-links.js";

/** One reason a call waits on a person (a policy ask, a taint ask, an amount over a limit). */
export interface AskReason {
  reason: string;
  message: string;
  /** The gate that asked (logs written before reasons were recorded do not say). */
  gate?: string;
}

/** A parked approval as the inbox shows it. */
export interface PendingApproval {
  runId: string;
  requestId: string;
  toolUseId: string;
  tool: string;
  /** The call's arguments as the log holds them (tokenised), redacted again for display. */
  args: unknown;
  reasons: AskReason[];
  argsDigest: string;
  policyDigest: string;
  /** When the request was written (ms since the epoch). */
  askedAt: number;
  expiresAt: number;
  /**
   * `pending` can be answered; `expired`, `stale` and `elsewhere` (asked inside a run another
   * run delegated to, whose tree this server does not run: the reads make it `pending` when the
   * tree's root was started by the served agent) can not, and `why` says why.
   */
  state: "pending" | "expired" | "stale" | "elsewhere";
  why?: string;
  /** The agent and task of the run, for context. */
  agentId?: string;
  task?: string;
  /**
   * For a run started by another run (`asTool`): the tree from its root down to this run,
   * each run's agent and task and the call that started the next (from the root's log).
   */
  chain?: ChainLink[];
}

/** One run of the chain above a delegated approval. */
export interface ChainLink {
  runId: string;
  agentId: string;
  task: string;
  /** The tool of this run that started the next run down. */
  tool?: string;
}

/** An answered approval, for the run page. */
export interface AnsweredApproval {
  requestId: string;
  tool: string;
  decision: string;
  approver?: string;
  note?: string;
  at: number;
}

/** What a run page shows beside its trace. */
export interface RunView {
  runId: string;
  agentId?: string;
  task?: string;
  status: string;
  why?: string;
  answer?: string;
  haltReason?: string;
  error?: string;
  steps: number;
  /** The run's spend, with what the runs it delegated to spent once they ended. */
  costUsd: number;
  /** The part of `costUsd` spent by the runs it delegated to. */
  delegatedCostUsd: number;
  events: number;
  createdAt: number;
  updatedAt: number;
  pending: PendingApproval[];
  answered: AnsweredApproval[];
  refusals: Array<{ tool: string; reason: string; refusedAt?: string; message?: string }>;
  /** The run that delegated to this one (a child run only). */
  parent?: ParentLink;
  /** The runs this one delegated to, in the order they started. */
  children: ChildLink[];
}

/**
 * Folds a run's events into what the web inbox and run page show. `policyDigest` is the
 * serving agent's current policy: a request bound to another digest is stale (the policy
 * changed since it was asked, so an answer would approve something nobody reviewed).
 */
export function runView(
  runId: string,
  events: readonly StoredEvent[],
  options: { now: number; policyDigest?: string; redact?: (value: unknown) => unknown },
): RunView {
  const redact = options.redact ?? ((value: unknown) => value);
  const view: RunView = {
    runId,
    status: "running",
    steps: 0,
    costUsd: 0,
    delegatedCostUsd: 0,
    events: events.length,
    createdAt: events[0]?.at ?? 0,
    updatedAt: events.at(-1)?.at ?? 0,
    pending: [],
    answered: [],
    refusals: [],
    children: [],
  };
  const links = runLinksOf(events);
  if (links.parent) view.parent = links.parent;
  view.children = links.children.map((child) =>
    child.error === undefined ? child : { ...child, error: String(redact(child.error)) },
  );
  const argsOf = new Map<string, unknown>();
  const open = new Map<string, PendingApproval>();
  const toolOf = new Map<string, string>();
  for (const event of events) {
    switch (event.type) {
      case "run-start":
        view.agentId = event.agentId;
        view.task = String(redact(event.task));
        break;
      case "model-response":
        view.steps = Math.max(view.steps, event.step);
        view.costUsd += event.costUsd;
        for (const block of event.response.content ?? [])
          if (block.type === "tool_use") argsOf.set(block.id, block.input);
        break;
      case "child-run-wait":
        // Parked with its child: on the child's approval, or while it runs elsewhere.
        view.status = event.status;
        break;
      case "child-run-end":
        // Core charges a child's spend to its parent when the child ends.
        view.costUsd += event.costUsd;
        view.delegatedCostUsd += event.costUsd;
        break;
      case "tool-call-intent":
        argsOf.set(event.toolUseId, event.args);
        break;
      case "tool-call-refusal":
        view.refusals.push({
          tool: event.tool,
          reason: event.decision.reason ?? "refused",
          ...(event.decision.refusedAt ? { refusedAt: event.decision.refusedAt } : {}),
          ...(event.decision.message ? { message: String(redact(event.decision.message)) } : {}),
        });
        break;
      case "approval-request": {
        toolOf.set(event.requestId, event.tool);
        const reasons = reasonsOf(event as unknown as Record<string, unknown>, redact);
        const pending: PendingApproval = {
          runId,
          requestId: event.requestId,
          toolUseId: event.toolUseId,
          tool: event.tool,
          args: redact(argsOf.get(event.toolUseId) ?? {}),
          reasons,
          argsDigest: event.argsDigest,
          policyDigest: event.policyDigest,
          askedAt: event.at,
          expiresAt: event.expiresAt,
          state: "pending",
        };
        open.set(event.requestId, pending);
        view.status = "awaiting_approval";
        break;
      }
      case "approval-decision": {
        open.delete(event.requestId);
        view.answered.push({
          requestId: event.requestId,
          tool: toolOf.get(event.requestId) ?? "",
          decision: event.decision,
          ...(event.approver !== undefined ? { approver: String(redact(event.approver)) } : {}),
          ...(event.note !== undefined ? { note: String(redact(event.note)) } : {}),
          at: event.at,
        });
        if (open.size === 0) view.status = "running";
        break;
      }
      case "run-halt":
        view.haltReason = event.reason;
        break;
      case "run-resume":
        if (open.size === 0) view.status = "running";
        break;
      case "run-end":
        view.status = event.status;
        view.why = event.why;
        view.answer = String(redact(event.answer));
        if (event.error !== undefined) view.error = String(redact(event.error));
        break;
      default:
        break;
    }
  }
  const ended = events.some((event) => event.type === "run-end");
  for (const pending of open.values()) {
    if (ended) continue;
    if (pending.expiresAt <= options.now) {
      pending.state = "expired";
      pending.why = `expired ${new Date(pending.expiresAt).toISOString()}: the run will treat it as a denial when it resumes`;
    } else if (view.parent) {
      pending.state = "elsewhere";
      pending.why = `asked inside run ${runId}, which run ${view.parent.runId} started through its tool ${view.parent.tool}: answer it where the tree's root agent runs, with agent.approve("${view.parent.rootRunId}", answer) (one approval resumes the whole tree); this server does not run that tree's root agent (its policy digest is not the served agent's)`;
    } else if (
      options.policyDigest !== undefined &&
      options.policyDigest !== pending.policyDigest
    ) {
      pending.state = "stale";
      pending.why =
        "the policy changed since this was asked (its digest differs): an answer would approve what nobody reviewed; resume the run to ask again under the current policy";
    }
    if (view.agentId !== undefined) pending.agentId = view.agentId;
    if (view.task !== undefined) pending.task = view.task;
    view.pending.push(pending);
  }
  return view;
}

/** Every reason of an approval request: all asks of the call when the log lists them. */
function reasonsOf(
  event: Record<string, unknown>,
  redact: (value: unknown) => unknown,
): AskReason[] {
  const listed = event.reasons;
  if (Array.isArray(listed) && listed.length > 0) {
    return listed.map((item) => {
      const entry = (item ?? {}) as Record<string, unknown>;
      return {
        reason: String(entry.reason ?? "ask"),
        message: String(redact(String(entry.message ?? ""))),
        ...(typeof entry.gate === "string" ? { gate: entry.gate } : {}),
      };
    });
  }
  return [
    {
      reason: String(event.reason ?? "ask"),
      message: String(redact(String(event.message ?? ""))),
    },
  ];
}
