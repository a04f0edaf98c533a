// Node, Bun and Deno: run the scenario against the built packages and print one JSON line.
import { runScenario } from "./scenario.mjs";

const runtime =
  typeof globalThis.Deno !== "undefined"
    ? "deno"
    : typeof globalThis.Bun !== "undefined"
      ? "bun"
      : "node";
const report = await runScenario(runtime);
console.log(`LOOPGUARD_CONFORMANCE ${JSON.stringify(report)}`);
