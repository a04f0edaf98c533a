import type pc from "picocolors";
import { UsageError } from "./usage-error.js";

/** Options of `loopguard eval --live`. */
export interface LiveEvalOptions {
  k: number;
  json: boolean;
  only: string[];
  out: (line: string) => void;
  colors: ReturnType<typeof pc.createColors>;
}

/** Runs the live scenarios k times each against Claude and prints pass@k with Wilson intervals. */
export async function liveEval(options: LiveEvalOptions): Promise<number> {
  if (!process.env.ANTHROPIC_API_KEY)
    throw new UsageError(
      "eval --live needs ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL to point at a test server)",
    );
  const { liveScorecard, formatLiveScorecard } = await import("@loopguard/evals");
  const card = await liveScorecard({
    k: options.k,
    ...(options.only.length > 0 ? { only: options.only } : {}),
  });
  options.out(options.json ? JSON.stringify(card, null, 2) : formatLiveScorecard(card));
  return card.ok ? 0 : 1;
}
