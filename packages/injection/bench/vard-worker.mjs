// Times @andersmyrmel/vard on one adversarial input inside a worker, so the bench can stop it
// when it backtracks for too long (a synchronous regex cannot be interrupted otherwise).
import { parentPort, workerData } from "node:worker_threads";
import vard from "@andersmyrmel/vard";

const check = vard.moderate().maxLength(100_000_000);
const { unit, size } = workerData;
const text = unit.repeat(Math.ceil(size / unit.length)).slice(0, size);
const started = performance.now();
try {
  check.safeParse(text);
} catch {
  // A throw is an answer too.
}
parentPort.postMessage(performance.now() - started);
