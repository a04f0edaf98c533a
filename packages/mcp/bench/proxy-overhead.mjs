// The MCP proxy's overhead, measured beside a direct connection in one run: the official SDK
// client over stdio calls the same server (bench-server.mjs) directly, through a bare relay
// that only parses and re-writes each message (the floor of any inspecting hop), through the proxy with
// no gates, and through the proxy set up as the CLI is (policy, RunGuard, taint gate, default
// scanner, quarantine). Calls are interleaved round by round so machine noise hits every
// column alike. Prints p50 and p90 per call and the proxy's added p50; exits 1 with --check when
// an added p50 misses its goal (1 ms for tools/call, 2 ms for a 1 MB structured result).
//
//   pnpm --filter @loopguard/mcp build && node packages/mcp/bench/proxy-overhead.mjs [calls] [--check]
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const argv = process.argv.slice(2);
const check = argv.includes("--check");
const calls = Number(argv.find((arg) => /^\d+$/.test(arg)) ?? 2_000);
const bigCalls = Math.max(20, Math.round(calls / 20));
const here = import.meta.dirname;
const server = [join(here, "bench-server.mjs")];

async function connect(label, args) {
  const client = new Client({ name: `bench-${label}`, version: "1.0.0" });
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args, stderr: "ignore" }),
  );
  await client.listTools();
  return { label, client, small: [], big: [] };
}

const setups = [
  await connect("direct", server),
  await connect("relay (parse + write)", [
    join(here, "relay-process.mjs"),
    "--",
    process.execPath,
    ...server,
  ]),
  await connect("proxy, no gates", [
    join(here, "proxy-process.mjs"),
    "bare",
    "--",
    process.execPath,
    ...server,
  ]),
  await connect("proxy, CLI gates", [
    join(here, "proxy-process.mjs"),
    "gates",
    "--",
    process.execPath,
    ...server,
  ]),
];

async function timed(client, name, n) {
  const started = performance.now();
  const result = await client.callTool({ name, arguments: name === "ping" ? { n } : {} });
  const elapsed = performance.now() - started;
  if (result.isError)
    throw new Error(`${name} failed: ${JSON.stringify(result.content).slice(0, 200)}`);
  if (name === "big" && result.structuredContent?.items?.length !== 1_000)
    throw new Error("big lost its structured content");
  return elapsed;
}

// Warm-up: JIT, schema compilation, first allocations.
for (const setup of setups)
  for (let index = 0; index < 200; index += 1) await timed(setup.client, "ping", index);
for (const setup of setups)
  for (let index = 0; index < 5; index += 1) await timed(setup.client, "big", index);

for (let index = 0; index < calls; index += 1)
  for (const setup of setups) setup.small.push(await timed(setup.client, "ping", index));
for (let index = 0; index < bigCalls; index += 1)
  for (const setup of setups) setup.big.push(await timed(setup.client, "big", index));

const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};
const ms = (value) => value.toFixed(3);
const direct = setups[0];
const rows = [
  [
    "",
    `tools/call p50 (p90), ${calls} calls`,
    "added p50",
    `1 MB structured p50 (p90), ${bigCalls} calls`,
    "added p50",
  ],
];
const misses = [];
for (const setup of setups) {
  const small = quantile(setup.small, 0.5);
  const big = quantile(setup.big, 0.5);
  const addedSmall = small - quantile(direct.small, 0.5);
  const addedBig = big - quantile(direct.big, 0.5);
  rows.push([
    setup.label,
    `${ms(small)} ms (${ms(quantile(setup.small, 0.9))})`,
    setup === direct
      ? ""
      : `${ms(addedSmall)} ms (${(small / quantile(direct.small, 0.5)).toFixed(2)}x)`,
    `${ms(big)} ms (${ms(quantile(setup.big, 0.9))})`,
    setup === direct ? "" : `${ms(addedBig)} ms (${(big / quantile(direct.big, 0.5)).toFixed(2)}x)`,
  ]);
  if (setup.label.startsWith("proxy")) {
    if (addedSmall > 1)
      misses.push(`${setup.label}: tools/call adds ${ms(addedSmall)} ms p50 (goal 1 ms)`);
    if (addedBig > 2)
      misses.push(
        `${setup.label}: a 1 MB structured result adds ${ms(addedBig)} ms p50 (goal 2 ms)`,
      );
  }
}
const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
console.log(`MCP proxy overhead, Node ${process.version}, ${new Date().toISOString()}`);
for (const row of rows)
  console.log(row.map((cell, column) => cell.padEnd(widths[column])).join("  "));
console.log(misses.length === 0 ? "goals met" : `goals missed:\n- ${misses.join("\n- ")}`);
for (const setup of setups) await setup.client.close().catch(() => {});
process.exit(check && misses.length > 0 ? 1 : 0);
