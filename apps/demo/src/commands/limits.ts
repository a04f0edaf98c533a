import { postgresLimitStore } from "@loopguard/checkpoint";
import type { Command } from "commander";
import type { CliShared } from "../cli-context.js";
import { withDatabase } from "../postgres-connection.js";
import { UsageError } from "../usage-error.js";

/**
 * `loopguard limits`: the fleet's shared limits in the PostgreSQL limit store: every token
 * bucket (rate limits) with the tokens it holds now, and every tenant's day (tenantBudget):
 * USD settled, USD held by runs in progress, runs started, against the caps.
 */
export function register(program: Command, { out, colors }: CliShared): void {
  program
    .command("limits")
    .description(
      "show the fleet's rate-limit buckets and tenants' spend today from the PostgreSQL limit store",
    )
    .option("--connection <url>", "the PostgreSQL URL (default: DATABASE_URL)")
    .option("--schema <name>", "the schema of the limit store", "loopguard")
    .option("--tenant <name>", "only this tenant's counters")
    .option("--prefix <key>", "only buckets and counters whose key starts with this")
    .option("--json", "print JSON instead of tables")
    .action(
      async (options: {
        connection?: string;
        schema: string;
        tenant?: string;
        prefix?: string;
        json?: boolean;
      }) => {
        const connectionString = options.connection ?? process.env.DATABASE_URL;
        if (!connectionString)
          throw new UsageError(
            'limits needs the fleet\'s PostgreSQL database: --connection postgres://... or DATABASE_URL (a local one: eval "$(scripts/postgres.sh start)" in a clone of loopguard)',
          );
        if (options.tenant !== undefined && options.prefix !== undefined)
          throw new UsageError("limits: pass --tenant or --prefix, not both");
        const prefix =
          options.tenant !== undefined ? `tenant:${options.tenant}:` : (options.prefix ?? "");
        const store = postgresLimitStore({ connectionString, schema: options.schema, max: 1 });
        const now = Date.now();
        const view = await withDatabase(connectionString, () =>
          store.inspect({ prefix, now, limit: 500 }).finally(() => store.close()),
        );
        if (options.json) {
          out(JSON.stringify({ at: new Date(now).toISOString(), ...view }, null, 2));
          return;
        }
        const money = (usd: number) => `$${usd.toFixed(usd < 10 ? 4 : 2)}`;
        const buckets = view.buckets.filter((bucket) => !bucket.key.startsWith("tenant:"));
        out(colors.bold(`rate-limit buckets (${buckets.length})`));
        if (buckets.length === 0) out(colors.dim("  none (a bucket appears at its first take)"));
        for (const bucket of buckets)
          out(
            `  ${bucket.key}  ${bucket.tokens.toFixed(2)}/${bucket.capacity} tokens, +${bucket.refillPerSecond}/s`,
          );
        const tenants = new Map<
          string,
          {
            day: number;
            usd?: (typeof view.counters)[number];
            runs?: (typeof view.counters)[number];
          }
        >();
        const others: typeof view.counters = [];
        for (const counter of view.counters) {
          const match = /^tenant:(.+):(usd|runs)$/.exec(counter.key);
          if (!match) {
            others.push(counter);
            continue;
          }
          const name = `${match[1]}@${counter.windowStart}`;
          const entry = tenants.get(name) ?? { day: counter.windowStart };
          entry[match[2] as "usd" | "runs"] = counter;
          tenants.set(name, entry);
        }
        out(colors.bold(`tenants' days (${tenants.size})`));
        if (tenants.size === 0) out(colors.dim("  none today (a tenant appears at its first run)"));
        for (const [name, entry] of tenants) {
          const tenant = name.slice(0, name.lastIndexOf("@"));
          const parts: string[] = [];
          if (entry.usd) {
            const used = entry.usd.settled + entry.usd.reserved;
            const share = entry.usd.cap > 0 ? used / entry.usd.cap : 1;
            const paint = share >= 0.9 ? colors.red : share >= 0.7 ? colors.yellow : colors.green;
            parts.push(
              paint(
                `${money(entry.usd.settled)} spent + ${money(entry.usd.reserved)} held of ${money(entry.usd.cap)}`,
              ),
              colors.dim(`(${entry.usd.openReservations} open step reservations)`),
            );
          }
          if (entry.runs)
            parts.push(`${entry.runs.settled + entry.runs.reserved}/${entry.runs.cap} runs`);
          out(`  ${tenant}  day from ${new Date(entry.day).toISOString()}  ${parts.join("  ")}`);
        }
        if (others.length > 0) {
          out(colors.bold(`other counters (${others.length})`));
          for (const counter of others)
            out(
              `  ${counter.key}  ${counter.settled + counter.reserved}/${counter.cap} until ${new Date(counter.windowEnd).toISOString()}`,
            );
        }
      },
    );
}
