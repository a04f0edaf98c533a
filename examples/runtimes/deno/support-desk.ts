// Deno 2: `deno run --allow-read --allow-env examples/runtimes/deno/support-desk.ts` (npm
// packages through node_modules, as Deno reads a package.json). The in-memory store keeps the
// run for this process.
import { memoryEventStore } from "@loopguard/core/testing";
import { answerTicket } from "../support-desk.ts";

const outcome = await answerTicket("deno", memoryEventStore());
console.log(JSON.stringify(outcome));
