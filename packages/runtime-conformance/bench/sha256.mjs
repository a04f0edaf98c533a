#!/usr/bin/env node
// `node bench/sha256.mjs` (after `pnpm build`): what core's digests cost with the runtime's
// native SHA-256 (process.getBuiltinModule("node:crypto"), what Node, Bun and Deno use) and with
// the pure-JavaScript fallback (@noble/hashes, what a runtime without node:crypto uses), side by
// side on the same texts, in one run. Runs on Bun and Deno too.
// Core's digest module itself (built): portableSha256 is not exported from a public entry.
import { portableSha256, sha256 } from "../../core/dist/digest.js";

const time = (fn, text, count) => {
  for (let index = 0; index < Math.min(count, 200); index++) fn(text);
  const started = performance.now();
  for (let index = 0; index < count; index++) fn(text);
  return ((performance.now() - started) * 1000) / count;
};
console.log("bytes      native us   portable us   portable / native");
for (const size of [200, 2_000, 100_000]) {
  const text = "Order A1001 arrived broken; refund 89.99 to jane.roe@acme.example. "
    .repeat(size / 68 + 1)
    .slice(0, size);
  const count = Math.max(100, Math.floor(20_000_000 / size));
  if (sha256(text) !== portableSha256(text)) throw new Error("the two digests differ");
  const native = time(sha256, text, count);
  const portable = time(portableSha256, text, count);
  console.log(
    `${String(size).padEnd(9)} ${native.toFixed(1).padStart(10)} ${portable.toFixed(1).padStart(13)} ${(portable / native).toFixed(1).padStart(18)}x`,
  );
}
