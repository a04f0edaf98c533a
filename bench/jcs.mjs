// RFC 8785 canonicalisation: core's hand-written `canonicalize` against the algorithm of the
// `canonicalize` package (2.1.0, Apache-2.0; inlined, since its current majors need Node 22) and
// the earlier sort-then-stringify (which mis-orders integer-like keys). Best of 9 rounds.
// Run: pnpm build && node bench/jcs.mjs
import { canonicalize } from "../packages/core/dist/jcs.js";

function reference(object) {
  if (typeof object === "number" && Number.isNaN(object)) throw new Error("NaN is not allowed");
  if (typeof object === "number" && !Number.isFinite(object))
    throw new Error("Infinity is not allowed");
  if (object === null || typeof object !== "object") return JSON.stringify(object);
  if (object.toJSON instanceof Function) return reference(object.toJSON());
  if (Array.isArray(object)) {
    const values = object.reduce((t, cv, ci) => {
      const comma = ci === 0 ? "" : ",";
      const value = cv === undefined || typeof cv === "symbol" ? null : cv;
      return `${t}${comma}${reference(value)}`;
    }, "");
    return `[${values}]`;
  }
  const values = Object.keys(object)
    .sort()
    .reduce((t, cv) => {
      if (object[cv] === undefined || typeof object[cv] === "symbol") return t;
      const comma = t.length === 0 ? "" : ",";
      return `${t}${comma}${reference(cv)}:${reference(object[cv])}`;
    }, "");
  return `{${values}}`;
}

function sortKeys(value) {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value))
    return value.map((item) => (item === undefined ? null : sortKeys(item)));
  const out = {};
  for (const key of Object.keys(value).sort())
    if (value[key] !== undefined) out[key] = sortKeys(value[key]);
  return out;
}
const earlier = (value) => JSON.stringify(sortKeys(value));

const inputs = [
  [
    "4-key tool arguments",
    { order_id: "A1001", amount: 89.99, reason: "damaged in transit", to: "jane@example.com" },
    100_000,
  ],
  [
    "50-item order, 6 KB",
    {
      items: Array.from({ length: 50 }, (_, index) => ({
        sku: `SKU-${index}`,
        qty: index % 5,
        price: index * 1.25,
        tags: ["a", "b"],
        meta: { z: 1, a: "x" },
      })),
      note: "x".repeat(2000),
    },
    2_000,
  ],
];
const systems = [
  ["canonicalize 2.1.0", reference],
  ["hand-written", canonicalize],
  ["sort + stringify", earlier],
];
console.log(
  "| input | canonicalize 2.1.0 | hand-written | sort + stringify (wrong for integer keys) |",
);
console.log("|---|---|---|---|");
for (const [label, value, n] of inputs) {
  const row = [];
  for (const [, fn] of systems) {
    if (fn(value) !== reference(value)) throw new Error(`${label}: output differs`);
    let best = Number.POSITIVE_INFINITY;
    for (let round = 0; round < 9; round += 1) {
      const started = process.hrtime.bigint();
      for (let index = 0; index < n; index += 1) fn(value);
      best = Math.min(best, Number(process.hrtime.bigint() - started) / n / 1000);
    }
    row.push(`${best.toFixed(2)} µs`);
  }
  console.log(`| ${label} | ${row.join(" | ")} |`);
}
