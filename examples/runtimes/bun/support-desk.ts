// Bun: `bun examples/runtimes/bun/support-desk.ts`. The packages' root entries run on Bun as
// published; the in-memory store keeps the run for this process.
import { memoryEventStore } from "@loopguard/core/testing";
import { answerTicket } from "../support-desk.ts";

const outcome = await answerTicket("bun", memoryEventStore());
console.log(JSON.stringify(outcome));
