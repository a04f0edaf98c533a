import type { AgentOptions } from "@loopguard/core";
import { memoryEventStore } from "@loopguard/core/testing";
import type { SupportDefences } from "./defences.js";
import type { SupportDesk } from "./support-desk/support-desk.js";

/**
 * The agent options that put the support desk and its defences together: the desk's tools and
 * system prompt, the gates, scanner, envelope, redaction and vault that are in place, and a
 * fresh memory store. The scorecard's scenarios and the live scorecard both start from these.
 */
export function deskOptions(
  desk: SupportDesk,
  defences: SupportDefences,
): Omit<AgentOptions, "model"> {
  return {
    tools: desk.tools,
    system: desk.system,
    gates: defences.gates,
    ...(defences.scanner ? { scanner: defences.scanner } : {}),
    ...(defences.envelope ? { envelope: defences.envelope } : {}),
    redact: defences.redact,
    ...(defences.vault ? { vault: defences.vault } : {}),
    store: memoryEventStore(),
  };
}
