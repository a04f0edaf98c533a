import { describe, expect, it } from "vitest";
import { resolveSubmitRetry, withConnectionRetry } from "./submit-connections.js";
import { submitRun } from "./worker-submit-run.js";

const coded = (code: string, message = `${code}: injected`) =>
  Object.assign(new Error(message), { code });

describe("submitRun's retry", () => {
  it("retries the connection errors of a restart (refused, reset, 57P01 admin shutdown, 57P03 starting up) up to maxAttempts", async () => {
    const retry = resolveSubmitRetry({ maxAttempts: 5, baseDelayMs: 0, maxDelayMs: 0 }, "test");
    const failures = [
      coded("ECONNREFUSED"),
      coded("ECONNRESET"),
      coded("57P01", "terminating connection due to administrator command"),
      coded("57P03", "the database system is starting up"),
    ];
    const attempts: number[] = [];
    const result = await withConnectionRetry(retry, async (attempt) => {
      attempts.push(attempt);
      const failure = failures[attempt - 1];
      if (failure) throw failure;
      return "queued";
    });
    expect(result).toBe("queued");
    expect(attempts).toEqual([1, 2, 3, 4, 5]);
  });

  it("gives up after maxAttempts with the caller's error, and never retries anything else", async () => {
    const retry = resolveSubmitRetry({ maxAttempts: 3, baseDelayMs: 0 }, "test");
    let calls = 0;
    const gaveUp = await withConnectionRetry(
      retry,
      async () => {
        calls += 1;
        throw coded("ECONNREFUSED");
      },
      (error, attempts) => new Error(`gave up after ${attempts}: ${(error as Error).message}`),
    ).catch((error: unknown) => error);
    expect(calls).toBe(3);
    expect(String(gaveUp)).toMatch(/gave up after 3: ECONNREFUSED/);
    calls = 0;
    const other = await withConnectionRetry(retry, async () => {
      calls += 1;
      throw coded("23505", "duplicate key value");
    }).catch((error: unknown) => error);
    expect(calls).toBe(1);
    expect(String(other)).toMatch(/duplicate key/);
  });

  it("refuses retry settings that are not bounded whole numbers, with a [checkpoint] error", async () => {
    expect(resolveSubmitRetry(false, "submitRun").maxAttempts).toBe(1);
    expect(resolveSubmitRetry(undefined, "submitRun")).toEqual({
      maxAttempts: 8,
      baseDelayMs: 100,
      maxDelayMs: 2_000,
    });
    for (const bad of [{ maxAttempts: 0 }, { maxAttempts: 1.5 }, { maxAttempts: 101 }]) {
      await expect(
        submitRun({ connectionString: "postgres://x@127.0.0.1:1/db", retry: bad }, "task"),
      ).rejects.toThrow(
        /^\[checkpoint\] submitRun: retry\.maxAttempts must be a whole number from 1 to 100/,
      );
    }
    await expect(
      submitRun(
        { connectionString: "postgres://x@127.0.0.1:1/db", retry: { maxDelayMs: -1 } },
        "task",
      ),
    ).rejects.toThrow(/retry\.maxDelayMs must be a whole number of milliseconds from 0 to 60000/);
    await expect(
      submitRun({ connectionString: "postgres://x@127.0.0.1:1/db", retry: "yes" as never }, "task"),
    ).rejects.toThrow(/retry must be false or \{ maxAttempts, baseDelayMs, maxDelayMs \}/);
  });
});
