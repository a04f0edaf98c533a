import { LoopguardError } from "@loopguard/core";

/** A wrong use of the CLI: printed with a usage hint, exit code 2. */
export class UsageError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.UsageError";
  constructor(message: string) {
    super("usage", `[loopguard] ${message}`);
  }
}
