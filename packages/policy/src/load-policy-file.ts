import { readFile } from "node:fs/promises";
import { InvalidArgumentError } from "@loopguard/core";
import { PolicyValidationError } from "./errors.js";
import { type LoadedPolicy, type LoadPolicyOptions, loadPolicy } from "./load-policy.js";

/**
 * Reads a policy document from a JSON file and loads it (see `loadPolicy`). Errors name the file.
 *
 * @example
 * import { loadPolicyFile } from "@loopguard/policy/node";
 * const { gates } = await loadPolicyFile("policy.json");
 */
export async function loadPolicyFile(
  path: string,
  options: LoadPolicyOptions = {},
): Promise<LoadedPolicy> {
  if (typeof path !== "string" || path.trim() === "")
    throw new InvalidArgumentError(
      '[policy] loadPolicyFile(path): path must be the policy JSON file, e.g. "policy.json"',
    );
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    throw new PolicyValidationError(
      [`${path}: cannot read the policy file (${(error as Error).message})`],
      { cause: error },
    );
  }
  try {
    return loadPolicy(text, options);
  } catch (error) {
    if (error instanceof PolicyValidationError)
      throw new PolicyValidationError(
        error.issues.map((issue) => `${path}: ${issue}`),
        { cause: error },
      );
    throw error;
  }
}
