/**
 * The scanner of a child run (`asTool`): its ancestors' scanner judges what the child reads as
 * it would judge what the parent reads. A child with a scanner of its own is scanned by both,
 * and the worst verdict stands.
 */
import type { Provenance, Scanner, ScanResult } from "./contracts/scanner.js";

const rank = { clean: 0, suspicious: 1, injection: 2 } as const;

function checked(scanner: Scanner, result: ScanResult): ScanResult {
  if (!result || !(result.verdict in rank) || !Array.isArray(result.findings))
    throw new TypeError(
      `scanner ${scanner.name} returned ${JSON.stringify(result)}; expected { verdict, score, findings }`,
    );
  return result;
}

/**
 * The scanner for a child's outputs: the tree's when the child has none, the child's when the
 * tree has none (or it is the same), else both (a throw of either fails the scan closed, as
 * any scanner's throw does: the output is then `suspicious`).
 */
export function treeScanner(
  own: Scanner | undefined,
  tree: Scanner | undefined,
): Scanner | undefined {
  if (!own || own === tree) return tree;
  if (!tree) return own;
  return {
    name: `${own.name}+${tree.name}`,
    async scan(text: string, provenance: Provenance): Promise<ScanResult> {
      const [first, second] = await Promise.all([
        Promise.resolve(own.scan(text, provenance)).then((result) => checked(own, result)),
        Promise.resolve(tree.scan(text, provenance)).then((result) => checked(tree, result)),
      ]);
      const worst =
        rank[second.verdict] > rank[first.verdict] ||
        (rank[second.verdict] === rank[first.verdict] && second.score > first.score)
          ? { result: second, scanner: tree }
          : { result: first, scanner: own };
      return {
        verdict: worst.result.verdict,
        score: Math.max(first.score, second.score),
        findings: [...first.findings, ...second.findings],
        scanner: worst.result.scanner ?? worst.scanner.name,
      };
    },
  };
}
