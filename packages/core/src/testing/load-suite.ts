import { InvalidArgumentError } from "../errors.js";

/**
 * Checks a conformance suite's options and loads vitest lazily (it is a devDependency of the
 * project that runs the suite, never a dependency of `@loopguard/core`).
 */
export async function loadSuite(
  suite: string,
  options: unknown,
  optional: string,
): Promise<typeof import("vitest")> {
  const record = options as { name?: unknown; create?: unknown } | null;
  if (
    typeof options !== "object" ||
    record === null ||
    typeof record.name !== "string" ||
    typeof record.create !== "function"
  ) {
    throw new InvalidArgumentError(
      `[core] ${suite}(options): pass { name, create } (and optionally ${optional})`,
    );
  }
  try {
    return await import("vitest");
  } catch (error) {
    throw new Error(
      `[core] ${suite} needs vitest: install it as a devDependency (pnpm add -D vitest) and call the suite from a vitest test file`,
      { cause: error },
    );
  }
}

/** Loads fast-check for a suite's property cases, saying what to install when it is missing. */
export async function loadFastCheck(suite: string): Promise<typeof import("fast-check").default> {
  try {
    return (await import("fast-check")).default;
  } catch (error) {
    throw new Error(
      `[core] ${suite} needs fast-check for its property cases: install it as a devDependency (pnpm add -D fast-check)`,
      { cause: error },
    );
  }
}
