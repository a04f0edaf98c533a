import { LoopguardError } from "../errors.js";

/** The `@anthropic-ai/sdk` module: the client class and the error classes. */
export type AnthropicSdk = typeof import("@anthropic-ai/sdk");

/** `@anthropic-ai/sdk` (an optional peer) is not installed. */
export class MissingSdkError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.MissingSdkError";
  constructor(what: string, options?: { cause?: unknown }) {
    super(
      "missing_sdk",
      `[core] ${what} needs @anthropic-ai/sdk: pnpm add @anthropic-ai/sdk`,
      options,
    );
  }
}

let ready: AnthropicSdk | undefined;

/**
 * Imports `@anthropic-ai/sdk` on first use (it is an optional peer, so nothing imports it at
 * load time) and keeps the module. Rejects with {@link MissingSdkError} when it is missing.
 */
export async function loadSdk(what: string): Promise<AnthropicSdk> {
  if (ready) return ready;
  try {
    ready = await import("@anthropic-ai/sdk");
    return ready;
  } catch (error) {
    if (isModuleNotFound(error)) throw new MissingSdkError(what, { cause: error });
    throw error;
  }
}

/** The SDK module once it has been loaded, for synchronous `instanceof` checks. */
export function loadedSdk(): AnthropicSdk | undefined {
  return ready;
}

/** Whether an import failed because the module is not installed (loaders may wrap the error in `cause`). */
function isModuleNotFound(error: unknown): boolean {
  for (
    let current = error, depth = 0;
    current && depth < 5;
    current = (current as { cause?: unknown }).cause, depth += 1
  ) {
    const code = (current as { code?: unknown }).code;
    if (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") return true;
    if (
      /Cannot find (module|package) '@anthropic-ai\/sdk'/.test(String((current as Error).message))
    )
      return true;
  }
  return false;
}
