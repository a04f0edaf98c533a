/**
 * The error scheme across every published package (one pattern for all of them): each exported
 * error class declares its own fixed marker `loopguard.error.<ClassName>`, markers are unique
 * across the packages, `isInstance` recognises a structural copy (an object that carries the
 * brand and the marker symbols, as an error from a second copy of a package does) and nothing
 * else, and each class has its own code.
 */
import * as checkpoint from "@loopguard/checkpoint";
import * as core from "@loopguard/core";
import * as coreAnthropic from "@loopguard/core/anthropic";
import * as corePlugin from "@loopguard/core/plugin";
import * as coreTesting from "@loopguard/core/testing";
import * as evals from "@loopguard/evals";
import * as injection from "@loopguard/injection";
import * as mcp from "@loopguard/mcp";
import * as policy from "@loopguard/policy";
import * as redact from "@loopguard/redact";
import * as tracingOtel from "@loopguard/tracing-otel";
import { describe, expect, it } from "vitest";
import * as postgresConnection from "../src/postgres-connection.js";
import * as usageError from "../src/usage-error.js";

interface ErrorClass {
  new (...args: never[]): Error;
  readonly name: string;
  readonly marker?: string;
  isInstance?(value: unknown): boolean;
}

// The CLI does not depend on the two adapters: loaded by name (the test config resolves every
// @loopguard/* name to its sources), so the CLI's type check need not see them.
const adapter = (name: string) => import(name) as Promise<Record<string, unknown>>;
const aiSdk = await adapter("@loopguard/ai-sdk");
const claudeAgentSdk = await adapter("@loopguard/claude-agent-sdk");

const modules: Record<string, Record<string, unknown>> = {
  "@loopguard/core": core,
  "@loopguard/core/anthropic": coreAnthropic,
  "@loopguard/core/plugin": corePlugin,
  "@loopguard/core/testing": coreTesting,
  "@loopguard/policy": policy,
  "@loopguard/injection": injection,
  "@loopguard/redact": redact,
  "@loopguard/checkpoint": checkpoint,
  "@loopguard/tracing-otel": tracingOtel,
  "@loopguard/evals": evals,
  "@loopguard/ai-sdk": aiSdk,
  "@loopguard/mcp": mcp,
  "@loopguard/claude-agent-sdk": claudeAgentSdk,
  "loopguard (CLI)": { ...postgresConnection, ...usageError },
};

/** Every exported error class, once (a class re-exported under another name counts once). */
const classes = new Map<ErrorClass, string>();
for (const [module, exports] of Object.entries(modules))
  for (const [exported, value] of Object.entries(exports))
    if (
      typeof value === "function" &&
      value.prototype instanceof Error &&
      !classes.has(value as ErrorClass)
    )
      classes.set(value as ErrorClass, `${module} ${exported}`);

const brand = Symbol.for("loopguard.error");
const structuralCopy = (...markers: string[]) =>
  Object.fromEntries(
    [brand, ...markers.map((marker) => Symbol.for(marker))].map((key) => [key, true]),
  );
/** The markers a class and its ancestors declare, nearest first. */
function markersOf(type: ErrorClass): string[] {
  const markers: string[] = [];
  for (
    let at: unknown = type;
    typeof at === "function" && at !== Error;
    at = Object.getPrototypeOf(at)
  )
    if (Object.hasOwn(at, "marker")) markers.push((at as ErrorClass).marker!);
  return markers;
}
const isAbstractBase = (type: ErrorClass) =>
  (type as unknown) === core.LoopguardError || (type as unknown) === redact.RedactError;

/** Builds an instance with placeholder arguments (every constructor takes strings, numbers, arrays or options). */
function construct(type: ErrorClass): Error & { code?: string } {
  const args: Record<string, unknown[]> = {
    PolicyValidationError: [["[test] rules.0.tool: expected a string"]],
    AmbiguousApprovalError: ["run", ["a", "b"], undefined],
    UnknownModelPriceError: ["model", ["claude"]],
    MissingPeerError: ["pg", "[test] x"],
  };
  return Reflect.construct(type, args[type.name] ?? ["[test] x", "[test] y", 1, 2, 3]);
}

describe("the error scheme of every published package", () => {
  it("finds the error classes of every package", () => {
    const found = [...classes.values()];
    for (const where of [
      "@loopguard/core ModelCallError",
      "@loopguard/core/anthropic MissingSdkError",
      "@loopguard/policy FreezeStoreError",
      "@loopguard/redact VaultKeyError",
      "@loopguard/checkpoint FencedError",
      "@loopguard/tracing-otel TraceExportError",
      "@loopguard/evals CorpusFileError",
      "@loopguard/ai-sdk BudgetExceededError",
      "@loopguard/mcp McpGuardError",
      "loopguard (CLI) UsageError",
    ])
      expect(found).toContain(where);
    // redact imports no other loopguard package, so its base is its own.
    expect(Object.getPrototypeOf(redact.VaultKeyError)).toBe(redact.RedactError);
  });

  it("gives each exported error class its own fixed marker, loopguard.error.<ClassName>, unique across packages", () => {
    const seen = new Map<string, string>();
    for (const [type, where] of classes) {
      expect(Object.hasOwn(type, "marker"), `${where} declares no marker of its own`).toBe(true);
      expect(type.marker, where).toBe(`loopguard.error.${type.name}`);
      expect(
        seen.get(type.marker!),
        `${where} reuses the marker of ${seen.get(type.marker!)}`,
      ).toBeUndefined();
      seen.set(type.marker!, where);
      expect(typeof type.isInstance, `${where} has no static isInstance`).toBe("function");
    }
  });

  it("recognises a structural copy (another copy of the package) by its markers, and nothing else", () => {
    const all = [...classes.keys()];
    for (const type of all) {
      const copy = structuralCopy(...markersOf(type));
      expect(type.isInstance!(copy), `${classes.get(type)} refuses its structural copy`).toBe(true);
      // Without the brand, or with the marker only, it is not a loopguard error.
      expect(type.isInstance!({ [Symbol.for(type.marker!)]: true })).toBe(false);
      expect(type.isInstance!(new Error(type.marker))).toBe(false);
      expect(type.isInstance!(null)).toBe(false);
      for (const other of all) {
        if (other === type) continue;
        // LoopguardError.isInstance answers for any loopguard error, redact's included.
        const related =
          markersOf(type).includes(other.marker!) || (other as unknown) === core.LoopguardError;
        expect(
          other.isInstance!(copy),
          `${classes.get(other)} vs a copy of ${classes.get(type)}`,
        ).toBe(related);
      }
    }
  });

  it("brands real instances the same way, names them from the marker and gives each class its own code", () => {
    const codes = new Map<string, string>();
    for (const [type, where] of classes) {
      if (isAbstractBase(type)) continue;
      const error = construct(type);
      expect(type.isInstance!(error), where).toBe(true);
      expect(core.LoopguardError.isInstance(error), `${where} is not a loopguard error`).toBe(true);
      expect(error.name, where).toBe(type.marker!.slice("loopguard.error.".length));
      for (const marker of markersOf(type))
        expect((error as unknown as Record<symbol, unknown>)[Symbol.for(marker)], where).toBe(true);
      expect(error.code, `${where} has no code`).toMatch(/^[a-z][a-z0-9_]*$/);
      expect(
        codes.get(error.code!),
        `${where} reuses the code of ${codes.get(error.code!)}`,
      ).toBeUndefined();
      codes.set(error.code!, where);
    }
  });
});
