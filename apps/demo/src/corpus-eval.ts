import type pc from "picocolors";

/** Options of `loopguard eval --corpus`. */
export interface CorpusEvalOptions {
  json: boolean;
  out: (line: string) => void;
  colors: ReturnType<typeof pc.createColors>;
}

/** Runs the attack corpus through the support desk and prints harmful and benign outcomes per subset. */
export async function corpusEval(options: CorpusEvalOptions): Promise<number> {
  const { runCorpus, formatCorpusReport } = await import("@loopguard/evals");
  const report = await runCorpus();
  options.out(options.json ? JSON.stringify(report, null, 2) : formatCorpusReport(report));
  return report.harmful === 0 ? 0 : 1;
}
