import { type ChildProcess, spawn } from "node:child_process";
import { createHash, type Hash } from "node:crypto";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  ErrorCode,
  type JSONRPCMessage,
  JSONRPCMessageSchema,
} from "@modelcontextprotocol/sdk/types.js";

/** Options of `ChildStdioTransport`. */
export interface ChildStdioTransportOptions {
  command: string;
  args: readonly string[];
  env: Record<string, string>;
  cwd?: string;
  /** A line (one JSON-RPC message) longer than this many bytes is refused, never buffered whole. */
  maxMessageBytes: number;
  /** Who the server is, for messages: `MCP server "fs"`. */
  label: () => string;
  /** The child's stderr: inherited (the default) or ignored. */
  stderr?: "inherit" | "ignore";
}

/** How much of an oversized line is kept at each end, to say what it was and whom it answered. */
const keptBytes = 4_096;

/**
 * The proxy's stdio link to the MCP server it fronts, hardened against that server: a line
 * over `maxMessageBytes` is streamed through a SHA-256 and dropped (its request, when its id
 * can be read from the line's end, gets a JSON-RPC error saying so); a line that is not
 * JSON-RPC is reported to `onerror` and skipped; neither ends the connection. The SDK's own
 * stdio client buffers at most 10 MiB and closes the connection past it, so one large result
 * would end every later call.
 */
export class ChildStdioTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onerror?: (error: Error) => void;
  onclose?: () => void;
  readonly #options: ChildStdioTransportOptions;
  #child: ChildProcess | undefined;
  #chunks: Buffer[] = [];
  #size = 0;
  #overflow: { hash: Hash; head: Buffer; tail: Buffer; bytes: number } | undefined;
  #closed = false;

  constructor(options: ChildStdioTransportOptions) {
    this.#options = options;
  }

  /** The child's process id, once started. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  start(): Promise<void> {
    if (this.#child) throw new Error("[mcp] ChildStdioTransport already started");
    return new Promise((resolve, reject) => {
      const child = spawn(this.#options.command, [...this.#options.args], {
        env: this.#options.env,
        stdio: ["pipe", "pipe", this.#options.stderr ?? "inherit"],
        shell: false,
        windowsHide: true,
        ...(this.#options.cwd ? { cwd: this.#options.cwd } : {}),
      });
      this.#child = child;
      let started = false;
      child.on("error", (error) => {
        if (!started) reject(error);
        else this.onerror?.(error);
      });
      child.on("spawn", () => {
        started = true;
        resolve();
      });
      child.on("close", () => {
        if (this.#closed) return;
        this.#closed = true;
        this.onclose?.();
      });
      child.stdin?.on("error", (error) => this.onerror?.(error));
      child.stdout?.on("error", (error) => this.onerror?.(error));
      child.stdout?.on("data", (chunk: Buffer) => this.#read(chunk));
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#child?.stdin;
    if (!stdin || stdin.destroyed || this.#closed)
      return Promise.reject(new Error(`[mcp] ${this.#options.label()} is not running`));
    return new Promise((resolve, reject) => {
      const line = `${JSON.stringify(message)}\n`;
      if (stdin.write(line, (error) => (error ? reject(error) : undefined))) resolve();
      else stdin.once("drain", resolve);
    });
  }

  async close(): Promise<void> {
    const child = this.#child;
    if (!child || child.exitCode !== null || child.signalCode !== null) {
      if (!this.#closed) {
        this.#closed = true;
        this.onclose?.();
      }
      return;
    }
    const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
    child.stdin?.end();
    const wait = (ms: number) =>
      Promise.race([exited.then(() => true), sleep(ms).then(() => false)]);
    if (!(await wait(2_000))) {
      child.kill("SIGTERM");
      if (!(await wait(2_000))) child.kill("SIGKILL");
    }
  }

  #read(chunk: Buffer): void {
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf(10, start);
      const piece = chunk.subarray(start, newline === -1 ? chunk.length : newline);
      this.#append(piece);
      if (newline === -1) return;
      this.#endLine();
      start = newline + 1;
    }
  }

  #append(piece: Buffer): void {
    if (piece.length === 0) return;
    if (this.#overflow) {
      this.#overflow.hash.update(piece);
      this.#overflow.bytes += piece.length;
      this.#overflow.tail = Buffer.concat([this.#overflow.tail, piece]).subarray(-keptBytes);
      return;
    }
    if (this.#size + piece.length <= this.#options.maxMessageBytes) {
      this.#chunks.push(piece);
      this.#size += piece.length;
      return;
    }
    // Past the cap: from here on the line is hashed and counted, never kept.
    const line = Buffer.concat([...this.#chunks, piece]);
    this.#chunks = [];
    this.#size = 0;
    this.#overflow = {
      hash: createHash("sha256").update(line),
      head: Buffer.from(line.subarray(0, keptBytes)),
      tail: Buffer.from(line.subarray(-keptBytes)),
      bytes: line.length,
    };
  }

  #endLine(): void {
    const overflow = this.#overflow;
    if (overflow) {
      this.#overflow = undefined;
      this.#refuseOversized(overflow);
      return;
    }
    if (this.#size === 0) return;
    const text = Buffer.concat(this.#chunks, this.#size).toString("utf8").replace(/\r$/, "");
    this.#chunks = [];
    this.#size = 0;
    if (text.trim() === "") return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      this.onerror?.(
        new Error(
          `[mcp] ${this.#options.label()} wrote a line that is not JSON (${preview(text)}): ignored`,
        ),
      );
      return;
    }
    const message = JSONRPCMessageSchema.safeParse(parsed);
    if (!message.success) {
      this.onerror?.(
        new Error(
          `[mcp] ${this.#options.label()} wrote JSON that is not a JSON-RPC message (${preview(text)}): ignored`,
        ),
      );
      return;
    }
    this.onmessage?.(message.data);
  }

  #refuseOversized(overflow: { hash: Hash; head: Buffer; tail: Buffer; bytes: number }): void {
    const digest = overflow.hash.digest("hex");
    const size = sizeOf(overflow.bytes);
    const tail = overflow.tail.toString("utf8");
    // The TypeScript SDK writes a response's id last (`..., "jsonrpc":"2.0","id":7}`), the
    // Python SDK first (`{"jsonrpc":"2.0","id":7,"result":...`): either end may name it.
    const id =
      /"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")\s*\}\s*$/.exec(tail)?.[1] ??
      /^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")\s*,/.exec(
        overflow.head.toString("utf8"),
      )?.[1];
    const what = `[mcp] ${this.#options.label()} wrote a ${size} message, over the proxy's maxMessageBytes (${sizeOf(this.#options.maxMessageBytes)}): dropped unread (sha256 ${digest.slice(0, 16)}, it began ${preview(overflow.head.toString("utf8"))})`;
    this.onerror?.(new Error(what));
    if (id === undefined) return;
    let parsedId: string | number;
    try {
      parsedId = JSON.parse(id) as string | number;
    } catch {
      return;
    }
    // Its request gets an answer now rather than a timeout: the result was too large to pass.
    this.onmessage?.({
      jsonrpc: "2.0",
      id: parsedId,
      error: {
        code: ErrorCode.InternalError,
        message: `${what}. Ask for less (a narrower range, a page, a filter) or raise maxMessageBytes.`,
      },
    });
  }
}

function preview(text: string): string {
  const flat = text.replace(/\s+/g, " ");
  return JSON.stringify(flat.length > 80 ? `${flat.slice(0, 80)}…` : flat);
}

function sizeOf(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
  if (bytes >= 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${bytes} bytes`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
