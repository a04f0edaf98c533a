// Microseconds per scan of one 2 KB tool output, the call the agent loop makes after every
// tool. Two realistic pages: an order record with its support thread (an email address and
// an order id), and a knowledge-base article in prose. Median of many calls.
//
//   pnpm --filter @loopguard/injection bench:call
//   node bench/per-call.mjs --baseline /path/to/other/dist/index.js   # side by side
//
// Prints figures; asserts nothing about time.
import { performance } from "node:perf_hooks";

const orderPage = fit(
  [
    "Order A1001-7731 (placed 2026-03-14 09:12 UTC) for Jane Miller, jane.miller@acme-shop.com.",
    "Status: delivered on 18 March by DHL Express, tracking 1Z999AA10123456784; signed for at the front desk.",
    "Items: 1 x ErgoChair Pro (graphite), 89.99 EUR; 2 x Lumbar cushion, 19.50 EUR each; shipping 4.90 EUR; total 133.89 EUR, paid by card ending 4242.",
    "Customer message (2026-03-19): Hello, the chair arrived with a cracked base and one of the wheels is missing.",
    "I have attached two photos of the box and the base. Could you send a replacement base, or refund the chair if that is easier?",
    "I would prefer a replacement because we like the chair otherwise. Thanks, Jane.",
    "Agent note: photos confirm transit damage; carrier claim CL-55812 opened. Warehouse has replacement bases in stock (SKU EC-BASE-GR).",
    "Return policy: items damaged in transit may be replaced or refunded within thirty days of delivery; the customer does not pay return shipping.",
    "Previous orders: A0987-1120 (delivered), A0915-0042 (returned, refunded 49.00 EUR). Loyalty tier: silver since 2024.",
    "Shipping address: 14 Rue des Lilas, 69003 Lyon, France. Billing address: same. Preferred contact: email, weekdays.",
  ].join("\n"),
);

const articlePage = fit(
  [
    "How refunds work",
    "Section 4.2 of the handbook explains how returns are processed for orders shipped within the European Union.",
    "Customers may return any item within thirty days of delivery, provided the packaging is intact and the receipt is attached.",
    "The warehouse checks each parcel on arrival and the refund goes back to the original payment method within five business days.",
    "If the parcel was damaged in transit, the support team opens a claim with the carrier first; the customer is refunded without waiting for the claim.",
    "For questions, customers can write to support@acme-shop.com and quote their order number, for example A1001-7731.",
    "Partial refunds apply when only some items of an order come back; shipping costs are refunded only when the whole order is returned.",
    "Gift cards, personalised items and opened software are not returnable. Store credit never expires.",
  ].join(" "),
);

/** Repeats the lines to exactly 2,048 characters. */
function fit(text) {
  let page = text;
  while (page.length < 2048) page += `\n${text}`;
  return page.slice(0, 2048);
}

function usPerCall(fn, input, samples = 60, batch = 50) {
  for (let index = 0; index < 500; index++) fn(input); // warm-up
  const times = [];
  for (let sample = 0; sample < samples; sample++) {
    const start = performance.now();
    for (let index = 0; index < batch; index++) fn(input);
    times.push(((performance.now() - start) * 1000) / batch);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

const baselineIndex = process.argv.indexOf("--baseline");
const targets = [["this build", new URL("../dist/index.js", import.meta.url).href]];
if (baselineIndex !== -1) targets.push(["baseline", process.argv[baselineIndex + 1]]);

const scanners = [];
for (const [label, path] of targets) {
  const { heuristicScanner } = await import(path);
  scanners.push([label, heuristicScanner()]);
}

console.log(
  "heuristicScanner().scan on one 2 KB tool output, µs per call (median of 60 batches of 50)",
);
console.log(
  `| page | ${scanners.map(([label]) => `${label} µs`).join(" | ")} |${scanners.length > 1 ? " baseline ÷ this |" : ""}`,
);
console.log(`|---|${scanners.map(() => "---:").join("|")}|${scanners.length > 1 ? "---:|" : ""}`);
for (const [name, page] of [
  ["order record with support thread", orderPage],
  ["knowledge-base article (prose)", articlePage],
]) {
  // Interleave: each scanner is measured twice, in alternation, and the best median kept.
  const results = scanners.map(() => Number.POSITIVE_INFINITY);
  for (let round = 0; round < 2; round++)
    scanners.forEach(([, scanner], index) => {
      const us = usPerCall((text) => scanner.scan(text, { source: "tool_output" }), page);
      results[index] = Math.min(results[index], us);
    });
  const verdicts = scanners.map(([, scanner]) => scanner.scan(page).verdict).join("/");
  console.log(
    `| ${name} (${verdicts}) | ${results.map((us) => us.toFixed(1)).join(" | ")} |${results.length > 1 ? ` ${(results[1] / results[0]).toFixed(2)}x |` : ""}`,
  );
}

// Mixed text: one pass over every corpus row, in process CPU time (steadier than wall time on
// a shared machine), best of 8 rounds interleaved between the builds.
const { readFileSync } = await import("node:fs");
const { publicCorpusPath, noCorpusMessage } = await import("./public-corpus.mjs");
const corpusPath = publicCorpusPath();
if (!corpusPath) console.log(noCorpusMessage);
else {
  const texts = readFileSync(corpusPath, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line).text);
  const bytes = texts.reduce((sum, text) => sum + Buffer.byteLength(text), 0);
  const cpu = () => {
    const usage = process.cpuUsage();
    return usage.user + usage.system;
  };
  const best = scanners.map(() => 0);
  for (let round = 0; round < 8; round++)
    scanners.forEach(([, scanner], index) => {
      const start = cpu();
      for (const text of texts) scanner.scan(text, { source: "document" });
      best[index] = Math.max(best[index], bytes / (cpu() - start));
    });
  console.log(
    `\nMixed text: all ${texts.length} corpus rows (${(bytes / 1e6).toFixed(2)} MB), MB/s of CPU time, best of 8 interleaved rounds`,
  );
  console.log(
    `| ${scanners.map(([label]) => `${label} MB/s`).join(" | ")} |${scanners.length > 1 ? " this ÷ baseline |" : ""}`,
  );
  console.log(`|${scanners.map(() => "---:").join("|")}|${scanners.length > 1 ? "---:|" : ""}`);
  console.log(
    `| ${best.map((value) => value.toFixed(2)).join(" | ")} |${best.length > 1 ? ` ${(best[0] / best[1]).toFixed(2)}x |` : ""}`,
  );
}
