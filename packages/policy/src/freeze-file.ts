import * as v from "valibot";
import { FreezeStoreError } from "./errors.js";
import type { FreezeStatus } from "./freeze-store.js";

/**
 * The freeze file, version 1. Other tools may write it directly (atomically: write a temporary
 * file beside it, then rename): `{ "version": 1, "frozen": true, "reason": "...", "by": "alice",
 * "at": "2026-11-30T15:00:00.000Z" }`.
 */
export const freezeFileSchema = v.strictObject({
  version: v.literal(1),
  frozen: v.boolean(),
  reason: v.optional(v.string()),
  by: v.optional(v.string()),
  at: v.optional(v.pipe(v.string(), v.isoTimestamp())),
});

/** The freeze file's content. */
export type FreezeFile = v.InferOutput<typeof freezeFileSchema>;

/** Parses a freeze file; throws `FreezeStoreError` when it is not valid. */
export function parseFreezeFile(text: string, path: string): FreezeStatus {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new FreezeStoreError(
      `[policy] the freeze file ${path} is not valid JSON; rewrite it with \`loopguard freeze\` or \`loopguard unfreeze\` (calls are refused until then)`,
      { cause: error },
    );
  }
  const parsed = v.safeParse(freezeFileSchema, data);
  if (!parsed.success) {
    const issue = parsed.issues[0];
    const where = issue.path?.map((item) => String(item.key)).join(".") ?? "(root)";
    throw new FreezeStoreError(
      `[policy] the freeze file ${path} is not a version 1 freeze file (${where}: ${issue.message}); rewrite it with \`loopguard freeze\` or \`loopguard unfreeze\` (calls are refused until then)`,
    );
  }
  const file = parsed.output;
  return {
    frozen: file.frozen,
    ...(file.reason !== undefined ? { reason: file.reason } : {}),
    ...(file.by !== undefined ? { by: file.by } : {}),
    ...(file.at !== undefined ? { at: Date.parse(file.at) } : {}),
  };
}
