import type { Sabotage } from "@loopguard/evals";
import type pc from "picocolors";

/** Options of `loopguard eval --corpus`. */
export interface CorpusEvalOptions {
  json: boolean;
  out: (line: string) => void;
  colors: ReturnType<typeof pc.createColors>;
  /** Defences to switch off (e.g. `policy_deny`, to see what the taint gate catches alone). */
  sabotage?: readonly Sabotage[];
  /** A corpus file or folder to run instead of the default one. */
  corpus?: string;
}

/** Runs the attack corpus through the support desk and prints harmful and benign outcomes per subset. */
export async function corpusEval(options: CorpusEvalOptions): Promise<number> {
  const { runCorpus, formatCorpusReport } = await import("@loopguard/evals");
  const report = await runCorpus({
    ...(options.sabotage && options.sabotage.length > 0 ? { sabotage: options.sabotage } : {}),
    ...(options.corpus !== undefined ? { path: options.corpus } : {}),
  });
  if (options.sabotage && options.sabotage.length > 0 && !options.json)
    options.out(`switched off on purpose: ${options.sabotage.join(", ")}`);
  options.out(options.json ? JSON.stringify(report, null, 2) : formatCorpusReport(report));
  return report.harmful === 0 ? 0 : 1;
}
