import { AsyncResource } from "node:async_hooks";
import { currentRun, InvalidArgumentError, withRun } from "@loopguard/core";
import { sortGates } from "@loopguard/core/plugin";
import { type EnterRun, HookSession } from "./hook-session.js";
import type { LoopguardHooks, LoopguardHooksOptions } from "./loopguard-hooks-options.js";

export type { LoopguardHooks, LoopguardHooksOptions } from "./loopguard-hooks-options.js";

/**
 * Puts the Claude Agent SDK's tool calls through loopguard's gate pipeline: a `PreToolUse`
 * hook judges every call (policy, RunGuard, taint, approvals) and denies with a reason the
 * model reads; a `PostToolUse` hook scans the output and records it for the taint gate; and
 * `canUseTool` gives the same answer when the SDK asks for permission. An allowed call is
 * left to the SDK's own permission settings (loopguard never widens them).
 *
 * @example
 * const guard = loopguardHooks({ gates: [policy(rules), runGuard()], scanner: heuristicScanner() });
 * for await (const message of query({ prompt, options: { hooks: guard.hooks, canUseTool: guard.canUseTool } })) { ... }
 */
export function loopguardHooks(options: LoopguardHooksOptions = {}): LoopguardHooks {
  if (options === null || typeof options !== "object")
    throw new InvalidArgumentError(
      "[claude-agent-sdk] loopguardHooks(options): options must be an object such as { gates: [...] }",
    );
  const gates = sortGates(options.gates ?? []);
  for (const [index, gate] of gates.entries())
    if (!gate || typeof gate.check !== "function")
      throw new InvalidArgumentError(
        `[claude-agent-sdk] loopguardHooks: gates[${index}] is not a gate (it needs name, step and check)`,
      );
  const haltOn = options.haltOn ?? ["kill_switch", "policy_indeterminate"];
  const sensitive = new Set(options.sensitiveTools ?? []);
  const onError = (error: unknown, where: string) => {
    try {
      options.onError?.(error, where);
    } catch {
      // nowhere left to report
    }
  };

  // The hooks are called from the SDK's message loop, outside the caller's async context:
  // the run is fixed now (the caller's, or one of our own) and entered for every call.
  let run = currentRun();
  let enter: EnterRun = AsyncResource.bind(
    <T>(fn: () => Promise<T>): Promise<T> => fn(),
  ) as EnterRun;
  const logged = Object.keys(options.run ?? {}).filter((key) =>
    ["store", "exporters", "redact", "onEvent", "budget", "vault", "approval"].includes(key),
  );
  if (logged.length > 0)
    throw new InvalidArgumentError(
      `[claude-agent-sdk] loopguardHooks: options.run says who is running (runId, agentId, roles, task, attributes), not ${logged.join(", ")}`,
    );
  if (!run) {
    void withRun({ agentId: "claude-agent-sdk", ...options.run }, (handle) => {
      run = handle;
      enter = AsyncResource.bind(<T>(fn: () => Promise<T>): Promise<T> => fn()) as EnterRun;
    });
  }
  const session = new HookSession({
    options,
    gates,
    haltOn,
    sensitive,
    run: run!,
    enter,
    onError,
  });
  return {
    hooks: {
      PreToolUse: [{ hooks: [session.preToolUse] }],
      PostToolUse: [{ hooks: [session.postToolUse] }],
      PostToolUseFailure: [{ hooks: [session.postToolUseFailure] }],
      PermissionDenied: [{ hooks: [session.permissionDenied] }],
    },
    canUseTool: session.canUseTool,
    run: run!,
    close: () => session.close(),
  };
}
