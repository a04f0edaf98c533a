import { LoopguardError } from "@loopguard/core";

/** A wrong use of the CLI: printed with a usage hint, exit code 2. */
export class UsageError extends LoopguardError {
  constructor(message: string) {
    super("usage", `[loopguard] ${message}`);
  }
}
