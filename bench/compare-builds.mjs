// Two builds of loopguard side by side: `node compare-builds.mjs <system> <N> <repeats> <rounds>
// <checkoutA> <checkoutB>` runs `loop-overhead.mjs <system> <N> <repeats> no-memory` in each
// checkout's bench directory (each built: packages/*/dist), alternating A and B for `rounds`
// rounds (the order flips every round), and prints the median, p25 and min CPU µs per step of
// each, over the later half of each process's repeats (the first half warms the code up). One
// machine, interleaved, so a change in the machine's load falls on both.
import { execFileSync } from "node:child_process";
import { join } from "node:path";

const [system, n, repeats, rounds, ...checkouts] = process.argv.slice(2);
if (!system || checkouts.length < 2) {
  console.error(
    "usage: node compare-builds.mjs <system> <N> <repeats> <rounds> <checkoutA> <checkoutB>",
  );
  process.exit(2);
}
const samples = new Map(checkouts.map((checkout) => [checkout, []]));
for (let round = 0; round < Number(rounds); round += 1) {
  for (const checkout of round % 2 === 0 ? checkouts : [...checkouts].reverse()) {
    const out = execFileSync(
      process.execPath,
      ["--expose-gc", "loop-overhead.mjs", system, n, repeats, "no-memory"],
      { cwd: join(checkout, "bench"), encoding: "utf8" },
    );
    const { cpuUsPerStep } = JSON.parse(out.trim().split("\n").at(-1));
    samples.get(checkout).push(...cpuUsPerStep.slice(Math.floor(cpuUsPerStep.length / 2)));
  }
}
const at = (values, share) =>
  [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) * share)];
for (const [checkout, values] of samples)
  console.log(
    JSON.stringify({
      system,
      n: Number(n),
      checkout,
      cpuUsPerStepMedian: +at(values, 0.5).toFixed(1),
      p25: +at(values, 0.25).toFixed(1),
      min: +Math.min(...values).toFixed(1),
      samples: values.length,
    }),
  );
