import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { Writable } from "node:stream";
import pino from "pino";
import { describe, expect, it } from "vitest";
import winston from "winston";
import { createApp } from "../examples/pino-app.mjs";
import { patchConsole } from "./patch-console.js";
import { pinoRedaction } from "./pino-redaction.js";
import { redactFormat } from "./winston-redaction.js";

const RAW = [
  "jane@acme.io",
  "hunter2",
  "203.0.113.9",
  "4111 1111 1111 1111",
  "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",
];

function collector(): { lines: string[]; write(line: string): void } {
  const lines: string[] = [];
  return { lines, write: (line: string) => void lines.push(line) };
}

describe("pino", () => {
  it("the README example app writes no personal data and valid JSON lines", () => {
    const destination = collector();
    createApp(destination).signup({
      id: "r1",
      ip: "203.0.113.9",
      email: "jane@acme.io",
      password: "hunter2",
    });
    expect(destination.lines).toHaveLength(2);
    const [info, error] = destination.lines.map(
      (line) => JSON.parse(line) as Record<string, unknown>,
    );
    expect(info).toMatchObject({
      requestId: "r1",
      ip: "[IP_ADDRESS]",
      email: "[EMAIL]",
      password: "[SECRET]",
      msg: "signup for [EMAIL]",
    });
    expect((error!.err as Record<string, unknown>).message).toBe("welcome mail to [EMAIL] failed");
    for (const line of destination.lines) for (const raw of RAW) expect(line).not.toContain(raw);
  });

  it("the README shows the example app as it is", () => {
    const readme = readFileSync(resolve(import.meta.dirname, "../README.md"), "utf8");
    const app = readFileSync(resolve(import.meta.dirname, "../examples/pino-app.mjs"), "utf8");
    expect(readme).toContain(app.trim());
  });

  it("redacts serializer output, mixins and non-JSON lines", () => {
    const destination = collector();
    const logger = pino(
      { ...pinoRedaction(), mixin: () => ({ card: "4111 1111 1111 1111" }) },
      destination,
    );
    logger.info("token %s", "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");
    expect(JSON.parse(destination.lines[0]!)).toMatchObject({
      card: "[CREDIT_CARD]",
      msg: "token [SECRET]",
    });
    expect(pinoRedaction().hooks.streamWrite("plain jane@acme.io\n")).toBe("plain [EMAIL]\n");
  });
});

/** A writable stream that keeps each chunk written to it as a trimmed line. */
function lineSink() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString().trim());
      done();
    },
  });
  return { lines, stream };
}

describe("winston", () => {
  it("redactFormat redacts message, metadata and splat without mutating the caller's object", () => {
    const { lines, stream } = lineSink();
    const logger = winston.createLogger({
      format: winston.format.combine(redactFormat(), winston.format.splat(), winston.format.json()),
      transports: [new winston.transports.Stream({ stream })],
    });
    const meta = { user: { email: "jane@acme.io" }, apiKey: "abc" };
    logger.info("login from %s", "203.0.113.9", meta);
    logger.warn("card 4111 1111 1111 1111");
    expect(meta.user.email).toBe("jane@acme.io");
    const first = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(first).toMatchObject({
      level: "info",
      message: "login from [IP_ADDRESS]",
      user: { email: "[EMAIL]" },
      apiKey: "[SECRET]",
    });
    expect(JSON.parse(lines[1]!)).toMatchObject({ level: "warn", message: "card [CREDIT_CARD]" });
    for (const line of lines) for (const raw of RAW) expect(line).not.toContain(raw);
  });
});

describe("winston with errors (the README's setup)", () => {
  it("logs an Error's redacted message and stack, not {level: error}", () => {
    const { lines, stream } = lineSink();
    const logger = winston.createLogger({
      format: winston.format.combine(
        winston.format.errors({ stack: true }),
        redactFormat(),
        winston.format.json(),
      ),
      transports: [new winston.transports.Stream({ stream })],
    });
    logger.error(new Error("mailbox jane@acme.io is full"));
    const entry = JSON.parse(lines[0]!) as { level: string; message?: string; stack?: string };
    expect(entry.level).toBe("error");
    expect(entry.message).toBe("mailbox [EMAIL] is full");
    expect(entry.stack).toMatch(/^Error: mailbox \[EMAIL\] is full\n\s+at /);
    expect(lines[0]).not.toContain("jane@acme.io");
  });
});

describe("patchConsole", () => {
  it("redacts every argument and undoes cleanly", () => {
    const printed: unknown[][] = [];
    const original = (...args: unknown[]) => void printed.push(args);
    const fake = {
      log: original,
      info: original,
      warn: original,
      error: original,
      debug: original,
      trace: original,
    } as unknown as Console;
    const undo = patchConsole({ console: fake });
    fake.log("card", "4111 1111 1111 1111", { password: "hunter2", to: "jane@acme.io" });
    expect(printed[0]).toEqual(["card", "[CREDIT_CARD]", { password: "[SECRET]", to: "[EMAIL]" }]);
    undo();
    undo();
    expect(fake.log).toBe(original);
    fake.log("jane@acme.io");
    expect(printed[1]).toEqual(["jane@acme.io"]);
    expect(() => patchConsole({ console: fake, methods: ["table" as "log"] })).toThrow(
      /unknown method "table"/,
    );
  });
});
