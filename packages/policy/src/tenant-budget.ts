import {
  InvalidArgumentError,
  type LimitOperation,
  type LimitStore,
  type RunBudget,
  type RunBudgetRun,
  type RunBudgetVerdict,
} from "@loopguard/core";
import { limitBatch } from "@loopguard/core/plugin";

/** Options of `tenantBudget`. */
export interface TenantBudgetOptions {
  /**
   * Where the tenants' days are counted: `postgresLimitStore(...)` from `@loopguard/checkpoint`
   * for a fleet (every worker shares one count), `memoryLimitStore()` for one process.
   */
  store: LimitStore;
  /** Caps per tenant per calendar day; give at least one. */
  perDay: {
    /** USD a tenant's runs may spend in a day (reserved before each step, settled at the real cost). */
    maxUsd?: number;
    /** Runs a tenant may start in a day. */
    maxRuns?: number;
  };
  /** The IANA time zone whose calendar days count (e.g. `America/New_York`). Default `UTC`. */
  timeZone?: string;
  /**
   * The tenant of a run. Default: the run context's `tenant` (`agent.run(task, { context: {
   * attributes: { tenant: "acme" } } })`, `submitRun({ tenant })`). A run without a tenant is
   * refused (the budget cannot tell whose day it is): return a shared name to count such runs.
   */
  tenantOf?: (run: RunBudgetRun) => string | undefined;
}

/** A tenant's day, as `tenantBudget` counts it. */
export interface TenantDay {
  /** The calendar day, `YYYY-MM-DD` in the budget's time zone. */
  day: string;
  /** When the day starts and ends (epoch ms; 23 or 25 hours on a daylight-saving change). */
  start: number;
  end: number;
}

/** A run-level budget over each tenant's calendar day (`createAgent({ budgets: [...] })`). */
export interface TenantBudget extends RunBudget {
  readonly name: "tenantBudget";
  /** The limit-store keys of a tenant: `usd` and `runs` counters. */
  keysOf(tenant: string): { usd: string; runs: string };
  /** The calendar day `at` falls on, in the budget's time zone. */
  dayOf(at: number): TenantDay;
}

const keyPart = /^[A-Za-z0-9_.:@-]{1,128}$/;

/**
 * Creates a run-level budget that caps each tenant's spend and run count per calendar day,
 * across every worker that shares `store`. It is a budget, not a gate: the loop asks it when a
 * run starts (a tenant past `maxRuns` gets no new run) and before each model step (the step's
 * worst-case cost is reserved; a step that could cross `maxUsd` is not taken, `max_tokens`
 * shrinking to what is left when that fits). The real cost is settled when the API reports
 * usage. A run counts against `maxRuns` on the day it starts, and each step's spend against
`maxUsd` on the day the step is taken, in `timeZone`.
 *
 * Reservations are named by run and step, so a step retried after a crash or a takeover holds
 * one reservation, settled by whichever worker finishes it; an abandoned reservation expires
 * with its day. A store that fails refuses (the run pauses, not lost).
 *
 * @example
 * const limits = postgresLimitStore({ connectionString: process.env.DATABASE_URL });
 * const agent = createAgent({ model, tools, budgets: [tenantBudget({ store: limits, perDay: { maxUsd: 20, maxRuns: 500 }, timeZone: "Europe/Paris" })] });
 * await agent.run("Where is order A1001?", { context: { attributes: { tenant: "acme" } } });
 */
export function tenantBudget(options: TenantBudgetOptions): TenantBudget {
  const where = "[policy] tenantBudget";
  if (!options || typeof options !== "object")
    throw new InvalidArgumentError(
      `${where}: pass { store, perDay: { maxUsd, maxRuns }, timeZone }, e.g. tenantBudget({ store: memoryLimitStore(), perDay: { maxUsd: 20 } })`,
    );
  const { store } = options;
  if (
    !store ||
    typeof store !== "object" ||
    typeof store.reserve !== "function" ||
    typeof store.settle !== "function"
  )
    throw new InvalidArgumentError(
      `${where}: store must be a LimitStore (postgresLimitStore from @loopguard/checkpoint, or memoryLimitStore from @loopguard/core/testing)`,
    );
  const perDay = options.perDay;
  if (
    !perDay ||
    typeof perDay !== "object" ||
    (perDay.maxUsd === undefined && perDay.maxRuns === undefined)
  )
    throw new InvalidArgumentError(
      `${where}: perDay needs maxUsd, maxRuns or both, e.g. perDay: { maxUsd: 20 }`,
    );
  const { maxUsd, maxRuns } = perDay;
  if (
    maxUsd !== undefined &&
    (typeof maxUsd !== "number" || !Number.isFinite(maxUsd) || maxUsd < 0)
  )
    throw new InvalidArgumentError(
      `${where}: perDay.maxUsd must be a finite number of dollars >= 0, got ${String(maxUsd)}`,
    );
  if (maxRuns !== undefined && (!Number.isSafeInteger(maxRuns) || maxRuns < 0))
    throw new InvalidArgumentError(
      `${where}: perDay.maxRuns must be a whole number >= 0, got ${String(maxRuns)}`,
    );
  const timeZone = options.timeZone ?? "UTC";
  const dayOf = calendarOf(timeZone, where);
  if (options.tenantOf !== undefined && typeof options.tenantOf !== "function")
    throw new InvalidArgumentError(`${where}: tenantOf must be a function (run) => tenant`);
  const tenantOf =
    options.tenantOf ??
    ((run: RunBudgetRun) =>
      typeof run.context.tenant === "string" ? run.context.tenant : undefined);

  const keysOf = (tenant: string) => ({
    usd: `tenant:${tenant}:usd`,
    runs: `tenant:${tenant}:runs`,
  });
  const who = (run: RunBudgetRun): { tenant: string } | RunBudgetVerdict => {
    const tenant = tenantOf(run);
    if (typeof tenant !== "string" || !keyPart.test(tenant))
      return {
        ok: false,
        reason: "tenant_missing",
        message: `${where}: run ${run.runId} has no valid tenant (got ${JSON.stringify(tenant)}); start it with context.attributes.tenant (1 to 128 letters, digits, "_", ".", ":", "@" or "-") so its spend counts against its tenant's day`,
      };
    return { tenant };
  };
  const usd = (value: number) => `$${value.toFixed(value < 1 ? 4 : 2)}`;

  return {
    name: "tenantBudget",
    keysOf,
    dayOf,
    async start(run) {
      const found = who(run);
      if (!("tenant" in found)) return found;
      if (maxRuns === undefined) return { ok: true };
      const day = dayOf(run.startedAt);
      const result = await store.reserve(
        keysOf(found.tenant).runs,
        { cap: maxRuns, windowStart: day.start, windowMs: day.end - day.start },
        1,
        { id: run.runId, now: run.startedAt },
      );
      if (result.ok) return { ok: true };
      return {
        ok: false,
        reason: "tenant_budget",
        message: `${where}: tenant ${found.tenant} has started its ${maxRuns} runs for ${day.day} (${timeZone}); this run was refused before any model call. It can run after the day ends, or raise perDay.maxRuns`,
      };
    },
    async reserve(run, step) {
      const found = who(run);
      if (!("tenant" in found)) return found;
      if (maxUsd === undefined) return { ok: true };
      // Spend counts on the day it is spent: a run going on past midnight reserves on the new
      // day (its old day's counter may be gone with its window).
      const day = dayOf(step.now);
      const result = await store.reserve(
        keysOf(found.tenant).usd,
        { cap: maxUsd, windowStart: day.start, windowMs: day.end - day.start },
        step.usd,
        { id: `${run.runId}:${step.step}`, now: step.now },
      );
      if (result.ok) return { ok: true };
      return {
        ok: false,
        reason: "tenant_budget",
        message: `${where}: tenant ${found.tenant}'s spend for ${day.day} (${timeZone}) would cross its ${usd(maxUsd)} a day (${usd(result.used)} spent or held by runs in progress; step ${step.step} could cost up to ${usd(step.usd)}), so the run stopped before the step`,
        availableUsd: Math.max(0, maxUsd - result.used),
      };
    },
    // The run's start and its first step in one round trip (one statement on PostgreSQL): all
    // or nothing, so on a refusal the loop asks start and reserve apart for the exact message.
    async startAndReserve(run, step) {
      const found = who(run);
      if (!("tenant" in found)) return found;
      const keys = keysOf(found.tenant);
      const runsDay = dayOf(run.startedAt);
      const stepDay = dayOf(step.now);
      const operations: LimitOperation[] = [];
      if (maxRuns !== undefined)
        operations.push({
          type: "reserve",
          key: keys.runs,
          counter: {
            cap: maxRuns,
            windowStart: runsDay.start,
            windowMs: runsDay.end - runsDay.start,
          },
          amount: 1,
          id: run.runId,
        });
      if (maxUsd !== undefined)
        operations.push({
          type: "reserve",
          key: keys.usd,
          counter: {
            cap: maxUsd,
            windowStart: stepDay.start,
            windowMs: stepDay.end - stepDay.start,
          },
          amount: step.usd,
          id: `${run.runId}:${step.step}`,
        });
      if (operations.length === 0) return { ok: true };
      const result = await limitBatch(store, operations, { now: step.now });
      if (result.ok) return { ok: true };
      return {
        ok: false,
        reason: "tenant_budget",
        message: `${where}: tenant ${found.tenant}'s day (${runsDay.day}, ${timeZone}) has no room for this run's start and first step`,
      };
    },
    async settle(run, step) {
      if (maxUsd === undefined) return;
      const tenant = tenantOf(run);
      if (typeof tenant !== "string" || !keyPart.test(tenant)) return;
      await store.settle(keysOf(tenant).usd, `${run.runId}:${step.step}`, step.usd, {
        now: step.now,
      });
    },
  };
}

/** The calendar days of an IANA time zone: `dayOf(at)` is the day `at` falls on there. */
function calendarOf(timeZone: string, where: string): (at: number) => TenantDay {
  let format: Intl.DateTimeFormat;
  try {
    format = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    });
  } catch (error) {
    throw new InvalidArgumentError(
      `${where}: timeZone ${JSON.stringify(timeZone)} is not an IANA time zone this runtime knows (e.g. "UTC", "Europe/Paris")`,
      { cause: error },
    );
  }
  // The UTC offset (ms) of the zone at instant `at`: the zone's wall clock read as if UTC, minus `at`.
  const offsetAt = (at: number): number => {
    const parts: Record<string, number> = {};
    for (const part of format.formatToParts(at))
      if (part.type !== "literal") parts[part.type] = Number(part.value);
    const wall = Date.UTC(
      parts.year!,
      parts.month! - 1,
      parts.day!,
      parts.hour!,
      parts.minute!,
      parts.second!,
    );
    return wall - Math.floor(at / 1000) * 1000;
  };
  // The instant the zone's wall clock reads midnight of (year, month, day).
  const midnight = (year: number, month: number, day: number): number => {
    const wall = Date.UTC(year, month, day);
    let at = wall - offsetAt(wall);
    at = wall - offsetAt(at);
    return at;
  };
  const dayOf = (at: number): TenantDay => {
    const local = new Date(at + offsetAt(at));
    const [year, month, day] = [local.getUTCFullYear(), local.getUTCMonth(), local.getUTCDate()];
    return {
      day: `${String(year).padStart(4, "0")}-${String(month + 1).padStart(2, "0")}-${String(day).padStart(2, "0")}`,
      start: midnight(year, month, day),
      end: midnight(year, month, day + 1),
    };
  };
  return dayOf;
}
