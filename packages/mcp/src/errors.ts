import { LoopguardError } from "@loopguard/core";

/** Something `@loopguard/mcp` was given cannot be used: bad options, a schema the validator cannot compile, an unknown tool. */
export class McpGuardError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.McpGuardError";
  constructor(message: string, options?: { cause?: unknown }) {
    super("mcp_invalid", message, options);
  }
}
