// How the no-progress defaults were chosen: each signal at several thresholds over generated
// runs, side by side: the share of stuck runs caught (and after how many calls) against the
// share of runs that make progress wrongly flagged.
// Run from packages/policy: `pnpm build && node bench/no-progress-thresholds.mjs [runs]`.
// The runs are generated (seeded), not recorded traffic: what each generator does is written
// beside it. Prints figures; asserts nothing.
import { digestOf, RunState } from "@loopguard/core/plugin";
import { runGuard } from "../dist/index.js";

const runsPerKind = Number(process.argv[2] ?? 400);
let seed = 20261201;
const random = () => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
};
const pick = (items) => items[Math.floor(random() * items.length)];
const int = (min, max) => min + Math.floor(random() * (max - min + 1));

// Each generator returns the calls of one run: { tool, args, result, refused? }.
const words =
  "refund shipping warranty invoice address password return exchange delay damaged missing coupon".split(
    " ",
  );
const progress = {
  // A support desk run: lookups of distinct orders, searches, one refund, one email.
  support_desk: () => {
    const calls = [];
    const orders = int(1, 6);
    for (let index = 0; index < orders; index += 1) {
      calls.push({
        tool: "lookup_order",
        args: { order_id: `A${int(1000, 9999)}` },
        result: `order ${index}`,
      });
      if (random() < 0.5)
        calls.push({
          tool: "search_kb",
          args: { query: `${pick(words)} ${pick(words)}` },
          result: `article ${int(1, 50)}`,
        });
    }
    calls.push({
      tool: "issue_refund",
      args: { order_id: "A1001", amount: int(5, 900) + 0.99 },
      result: "refunded",
    });
    calls.push({
      tool: "send_email",
      args: { to: "ann@acme-shop.com", body: "done" },
      result: "sent",
    });
    return calls;
  },
  // Paging through a list: offsets grow by the page size (10 to 100), from a random start.
  paging: () => {
    const size = pick([10, 20, 25, 50, 100]);
    const start = pick([0, 0, 0, 100, 1000, 5000, 20000]);
    return Array.from({ length: int(4, 12) }, (_unused, page) => ({
      tool: "list_orders",
      args: { status: "open", offset: start + page * size, limit: size },
      result: `page ${page}: ${size} orders`,
    }));
  },
  // Polling a job until it finishes: same arguments, results that change (progress %).
  polling: () => {
    const steps = int(3, 10);
    return Array.from({ length: steps }, (_unused, index) => ({
      tool: "job_status",
      args: { job: "J77" },
      result: index === steps - 1 ? "done" : `running ${Math.round((index / steps) * 100)}%`,
    }));
  },
  // Refunding the items of one order: same tool, different line items and amounts.
  line_items: () =>
    Array.from({ length: int(3, 8) }, (_unused, index) => ({
      tool: "issue_refund",
      args: { order_id: "A2002", line: index + 1, amount: int(5, 200) + 0.5 },
      result: `refunded line ${index + 1}`,
    })),
  // Searching with rephrased queries that bring new articles.
  research: () =>
    Array.from({ length: int(3, 8) }, () => ({
      tool: "search_kb",
      args: { query: `${pick(words)} ${pick(words)} ${pick(words)}` },
      result: `article ${int(1, 500)}`,
    })),
  // Reading a ledger day by day: a timestamp argument one day (86,400 s) apart.
  daily_report: () => {
    const start = 1_733_000_000 + int(0, 1e6);
    return Array.from({ length: int(4, 10) }, (_unused, index) => ({
      tool: "sales_report",
      args: { since: start + index * 86_400 },
      result: `total ${int(100, 9000)} (${index})`,
    }));
  },
  // Two tools in turn on different records (lookup order, lookup customer).
  alternating_records: () =>
    Array.from({ length: int(6, 12) }, (_unused, index) =>
      index % 2
        ? { tool: "lookup_customer", args: { id: `C${int(100, 999)}` }, result: `c${index}` }
        : { tool: "lookup_order", args: { id: `A${int(1000, 9999)}` }, result: `o${index}` },
    ),
};
const stuck = {
  // An amount that grows by 0.01 each call.
  amount_drift: () => {
    const base = int(10, 900) + 0.99;
    return Array.from({ length: 30 }, (_unused, index) => ({
      tool: "issue_refund",
      args: { order_id: "A1001", amount: +(base + index * 0.01).toFixed(2) },
      result: "refund failed: processor busy",
    }));
  },
  // The same query with one more trailing space, or another case, each time.
  query_spacing: () =>
    Array.from({ length: 30 }, (_unused, index) => ({
      tool: "search_kb",
      args: { query: `${index % 2 ? "Refund Policy" : "refund policy"}${" ".repeat(index)}` },
      result: "no article found",
    })),
  // Different arguments, the same useless answer.
  same_answer: () =>
    Array.from({ length: 30 }, (_unused, index) => ({
      tool: "track_parcel",
      args: { id: `P${int(1, 1e6)}-${index}` },
      result: "status: unknown",
    })),
  // Set, read, set back: two calls in turn, arguments re-cased.
  oscillation: () =>
    Array.from({ length: 30 }, (_unused, index) =>
      index % 2
        ? {
            tool: "get_plan",
            args: { account: "C1" },
            result: `plan ${index % 4 ? "basic" : "pro"}`,
          }
        : {
            tool: "set_plan",
            args: { account: "C1", plan: index % 4 ? "Basic" : "basic " },
            result: "ok",
          },
    ),
  // A call that a later step refuses each time (another recipient each time).
  refused_again: () =>
    Array.from({ length: 30 }, (_unused, index) => ({
      tool: "send_email",
      args: { to: `audit${index}@exfil.example` },
      refused: "tainted_argument",
    })),
};

let counter = 0;
/** Plays one run through a guard; returns the 1-based call index of the first no-progress decision, or 0. */
function play(guard, calls) {
  const run = new RunState({ runId: `r${counter++}`, agentId: "bench" });
  for (let index = 0; index < calls.length; index += 1) {
    const { tool, args, result, refused } = calls[index];
    const toolUseId = `t${index}`;
    const call = {
      tool,
      args,
      toolUseId,
      idempotencyKey: `${run.runId}:${toolUseId}`,
      sensitive: false,
      idempotent: false,
      run,
    };
    const decision = guard.check(call);
    if (decision.type !== "allow" && /^no_progress|run_halted$/.test(decision.reason))
      return index + 1;
    if (decision.type !== "allow" || refused) {
      const reason = decision.type === "allow" ? refused : decision.reason;
      run.refusals.push({
        tool,
        toolUseId,
        reason,
        decision: { outcome: "deny", passed: [], reason },
      });
      continue;
    }
    run.calls.push({ tool, argsDigest: digestOf(args), toolUseId });
    run.outputs.push({
      tool,
      toolUseId,
      text: `<tool_output tool="${tool}" call="${toolUseId}">\n${result}\n</tool_output>`,
    });
  }
  return 0;
}

function measure(options) {
  const guard = runGuard({ detectLoops: false, noProgress: options });
  const row = {};
  for (const [name, make] of Object.entries(progress)) {
    let flagged = 0;
    seed = 7 + name.length;
    for (let run = 0; run < runsPerKind; run += 1) if (play(guard, make())) flagged += 1;
    row[`fp:${name}`] = +((flagged / runsPerKind) * 100).toFixed(1);
  }
  for (const [name, make] of Object.entries(stuck)) {
    let caught = 0;
    let at = 0;
    seed = 11 + name.length;
    for (let run = 0; run < runsPerKind; run += 1) {
      const index = play(guard, make());
      if (index) {
        caught += 1;
        at += index;
      }
    }
    row[`caught:${name}`] =
      `${((caught / runsPerKind) * 100).toFixed(0)}%@${caught ? (at / caught).toFixed(1) : "-"}`;
  }
  return row;
}

const off = { nearRepeats: false, sameResults: false, oscillations: false, refusalStreak: false };
const table = [];
for (const nearRepeats of [3, 4, 5])
  for (const numberTolerance of [0, 0.001, 0.01, 0.05])
    for (const numberGap of [1, Number.POSITIVE_INFINITY])
      table.push({
        signal: `nearRepeats=${nearRepeats} tol=${numberTolerance} gap=${numberGap}`,
        ...measure({ ...off, nearRepeats, numberTolerance, numberGap }),
      });
for (const sameResults of [3, 4, 5])
  table.push({ signal: `sameResults=${sameResults}`, ...measure({ ...off, sameResults }) });
for (const oscillations of [2, 3, 4])
  table.push({ signal: `oscillations=${oscillations}`, ...measure({ ...off, oscillations }) });
for (const refusalStreak of [3, 5, 8])
  table.push({ signal: `refusalStreak=${refusalStreak}`, ...measure({ ...off, refusalStreak }) });
table.push({ signal: "defaults (noProgress: true)", ...measure({}) });
console.log(
  `no-progress thresholds: ${runsPerKind} generated runs per kind; fp = % of progressing runs flagged; caught = % of stuck runs flagged @ mean call index`,
);
console.table(table);
