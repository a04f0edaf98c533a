import type { GuardOptions } from "./guard.js";

/**
 * The `guardTool` options an adapter that guards a set of tools at once (`guardTools` of
 * `@loopguard/ai-sdk`, `guardMcpTools` of `@loopguard/mcp`) passes through to every tool it
 * wraps: the gates, the scanner and envelope, approvals, what halts, the breaker and errors.
 */
export type SharedGuardOptions = Pick<
  GuardOptions,
  | "gates"
  | "scanner"
  | "envelope"
  | "approver"
  | "approvalTimeoutMs"
  | "haltOn"
  | "breaker"
  | "onError"
>;
