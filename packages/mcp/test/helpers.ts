import { join } from "node:path";
import { PassThrough, type Readable, type Writable } from "node:stream";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { type McpProxy, type McpProxyOptions, runMcpProxy } from "../src/index.js";

export const shopServer = join(import.meta.dirname, "fixtures", "shop-server.mjs");

/** The host's end of a stdio link: newline-delimited JSON-RPC over two streams, as MCP's stdio transport frames it. */
export function streamTransport(input: Readable, output: Writable): Transport {
  const buffer = new ReadBuffer();
  let closed = false;
  const transport: Transport = {
    async start() {
      input.on("data", (chunk: Buffer) => {
        buffer.append(chunk);
        for (let message = buffer.readMessage(); message; message = buffer.readMessage())
          transport.onmessage?.(message);
      });
    },
    async send(message) {
      output.write(serializeMessage(message));
    },
    async close() {
      if (closed) return;
      closed = true;
      output.end();
      transport.onclose?.();
    },
  };
  return transport;
}

/** Starts the proxy in front of the shop server (a real child process) and a host client talking to it over stdio framing. */
export async function startProxy(
  options: Partial<McpProxyOptions> = {},
  hostOptions: { capabilities?: ConstructorParameters<typeof Client>[1] } = {},
): Promise<{ host: Client; proxy: McpProxy; logs: string[]; toProxy: PassThrough }> {
  const toProxy = new PassThrough();
  const fromProxy = new PassThrough();
  const logs: string[] = [];
  const proxy = await runMcpProxy({
    command: process.execPath,
    args: [shopServer],
    stdin: toProxy,
    stdout: fromProxy,
    log: (line) => logs.push(line),
    ...options,
  });
  const host = new Client({ name: "test-host", version: "1.0.0" }, hostOptions.capabilities);
  await host.connect(streamTransport(fromProxy, toProxy));
  return { host, proxy, logs, toProxy };
}

/** The text of a tool result. */
export function textOfResult(result: unknown): string {
  const content = (result as { content: { type: string; text?: string }[] }).content;
  return content.map((part) => part.text ?? "").join("\n");
}
