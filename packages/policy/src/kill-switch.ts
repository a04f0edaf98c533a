import { type Gate, type GateDecision, InvalidArgumentError, type ToolCall } from "@loopguard/core";
import { canonicalJson, sha256 } from "@loopguard/core/plugin";
import type { FreezeStore } from "./freeze-store.js";

/** Options of `killSwitch()`. */
export interface KillSwitchOptions {
  /** Where the freeze lives: `fileFreezeStore({ path })`, or a store shared across machines. */
  store: FreezeStore;
}

/** The kill-switch gate (step 0). */
export interface KillSwitchGate extends Gate {
  readonly name: "kill_switch";
  readonly step: "0";
  readonly store: FreezeStore;
  digest(): string;
  check(call: ToolCall): Promise<GateDecision>;
}

const allowDecision = Object.freeze({ type: "allow" as const });

/**
 * Builds the kill switch (step 0, `kill_switch`): while the store says the fleet is frozen,
 * every call is refused as `kill_switch`, which halts its run (it is in the default `haltOn`),
 * so each running run stops at its next call. A store that cannot tell is refused as
 * `kill_switch_unavailable` (fail closed, without halting, so runs continue once it reads again).
 *
 * @example
 * const gates = [killSwitch({ store: fileFreezeStore({ path: ".loopguard/freeze.json" }) }), policy(rules), runGuard()];
 */
export function killSwitch(options: KillSwitchOptions): KillSwitchGate {
  const store = options?.store;
  if (!store || typeof store.status !== "function" || typeof store.name !== "string") {
    throw new InvalidArgumentError(
      '[policy] killSwitch({ store }): store must be a FreezeStore such as fileFreezeStore({ path: ".loopguard/freeze.json" })',
    );
  }
  const digest = sha256(canonicalJson({ kind: "kill_switch", store: store.name }));
  const gate: KillSwitchGate = {
    name: "kill_switch",
    step: "0",
    store,
    digest: () => digest,
    async check() {
      let status: Awaited<ReturnType<FreezeStore["status"]>>;
      try {
        status = await store.status();
        if (status === null || typeof status !== "object" || typeof status.frozen !== "boolean") {
          throw new TypeError(
            `status() returned ${JSON.stringify(status)}; expected { frozen: boolean }`,
          );
        }
      } catch (error) {
        return {
          type: "deny",
          reason: "kill_switch_unavailable",
          message: `The kill switch could not read the ${store.name} freeze store, so the call was refused (fail closed): ${error instanceof Error ? error.message : String(error)}`,
          fixHints: ["Stop calling tools and tell the user the service is paused."],
        };
      }
      if (!status.frozen) return allowDecision;
      return {
        type: "deny",
        reason: "kill_switch",
        message: `All agents are frozen${status.by ? ` by ${status.by}` : ""}${typeof status.at === "number" && Number.isFinite(status.at) ? ` since ${new Date(status.at).toISOString()}` : ""}${status.reason ? `: ${status.reason}` : ""}. No tool calls are allowed.`,
        fixHints: ["Stop calling tools and tell the user the service is paused by an operator."],
        details: {
          ...(status.reason ? { freezeReason: status.reason } : {}),
          ...(status.by ? { by: status.by } : {}),
          ...(typeof status.at === "number" && Number.isFinite(status.at) ? { at: status.at } : {}),
        },
      };
    },
  };
  return Object.freeze(gate);
}
