// Does a step cost more late in a long run? `node --expose-gc growth.mjs <system> [rounds]`.
// In ONE process, alternates ten runs of N=100 with one run of N=1,000 (the same number of
// steps), so both sizes see the same heap and the same JIT state, then prints the CPU time per
// step of each size, one figure per round. Separate fresh processes (loop-overhead.mjs) also
// measure how the process's heap grows with the history; this isolates the loop itself.
import { systems } from "./systems.mjs";

const [system, roundsText] = process.argv.slice(2);
const rounds = Number(roundsText ?? 5);
const make = systems[system];
if (!make) {
  console.error(`unknown system ${system}; one of ${Object.keys(systems).join(", ")}`);
  process.exit(2);
}
const runOnce = await make();
await runOnce(200); // warm-up
const perStep = { 100: [], 1000: [] };
for (let round = 0; round < rounds; round += 1) {
  for (const [n, runs] of round % 2 === 0
    ? [
        [100, 10],
        [1000, 1],
      ]
    : [
        [1000, 1],
        [100, 10],
      ]) {
    globalThis.gc?.();
    const cpu = process.cpuUsage();
    for (let index = 0; index < runs; index += 1) await runOnce(n);
    const used = process.cpuUsage(cpu);
    perStep[n].push((used.user + used.system) / (n * runs));
  }
}
console.log(
  JSON.stringify({
    system,
    rounds,
    cpuUsPerStep100: perStep[100],
    cpuUsPerStep1000: perStep[1000],
  }),
);
