import type { Agent, ApprovalAnswer, EventStore, FreezeStore } from "@loopguard/core";
import type { WebBackend } from "./backend.js";
import { rootRunOf } from "./tree-answer.js";

/** Answers and resumes runs in this process; a resume after an answer runs in the background. */
export function localBackend(parts: {
  where: string;
  watchDir?: string;
  store: EventStore;
  freezeStore: FreezeStore;
  redact: (value: unknown) => unknown;
  policyDigest: string;
  agentFor: (runId: string) => Promise<Agent>;
  out: (line: string) => void;
}): WebBackend {
  const inFlight = new Set<Promise<unknown>>();
  const background = (runId: string, work: Promise<unknown>) => {
    const tracked = work
      .catch((error) =>
        parts.out(
          `[serve] run ${runId}: ${error instanceof Error ? error.message : String(error)}`,
        ),
      )
      .finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
  };
  return {
    kind: "jsonl",
    where: parts.where,
    ...(parts.watchDir ? { watchDir: parts.watchDir } : {}),
    store: parts.store,
    freezeStore: parts.freezeStore,
    policyDigest: parts.policyDigest,
    redact: parts.redact,
    async answer(runId: string, answer: ApprovalAnswer, options?: { wait?: boolean }) {
      // An approval asked inside a delegated run is recorded in that run by the tree's root
      // agent, and the tree goes on from its root (which resumes the child).
      const rootRunId = await rootRunOf(parts.store, runId);
      const agent = await parts.agentFor(rootRunId);
      if (options?.wait) return { status: (await agent.approve(runId, answer)).status };
      const result = await agent.approve(runId, answer, { resume: false });
      if (result.status !== "awaiting_approval") background(rootRunId, agent.resume(rootRunId));
      return { status: result.status === "awaiting_approval" ? result.status : "running" };
    },
    async resume(runId: string) {
      const agent = await parts.agentFor(runId);
      const result = await agent.resume(runId);
      return { status: result.status };
    },
    async halt(runId: string, reason: string, by: string) {
      const events = await parts.store.read(runId);
      if (events.length === 0) throw new Error(`run ${runId} not found`);
      if (events.some((event) => event.type === "run-end"))
        throw new Error(`run ${runId} has already ended`);
      await parts.store.append(
        runId,
        [{ type: "run-halt", reason: `operator: ${reason}`, source: `web:${by}`, at: Date.now() }],
        { expectedSeq: events.length },
      );
      // The run folds the halt back in and ends as halted (refusing what it was waiting on).
      const agent = await parts.agentFor(runId);
      const result = await agent.resume(runId);
      return { status: result.status };
    },
    async close() {
      await Promise.allSettled([...inFlight]);
    },
  };
}
