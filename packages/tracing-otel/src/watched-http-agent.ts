import type { Agent as HttpAgent } from "node:http";
import type { Socket } from "node:net";
import type { CollectorHealth } from "./collector-health.js";

/** Connection errors that mean the collector is not there (not a slow answer). */
const downCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EPIPE",
  "ETIMEDOUT",
]);

/** The code a connection gets once the exporter is shut down; the OTLP exporter never retries it. */
const closedCode = "ERR_LOOPGUARD_EXPORTER_CLOSED";

/**
 * An `httpAgentOptions` factory for the OTLP exporter: a keep-alive agent whose sockets tell
 * `health` at once when a connection is refused or reset (the OTLP exporter itself retries such
 * errors with backoff for up to its whole timeout), and that makes no connection once the
 * exporter is shut down (its pending retries then fail at once instead of holding the process).
 */
export function watchedAgentFactory(
  health: CollectorHealth,
): (protocol: string) => Promise<HttpAgent> {
  return async (protocol) => {
    const module = protocol === "http:" ? await import("node:http") : await import("node:https");
    const agent = new module.Agent({ keepAlive: true });
    // Agent#createConnection (net/tls.createConnection) is documented but not in the typings.
    const connectable = agent as unknown as { createConnection: CreateConnection };
    const create = connectable.createConnection.bind(agent);
    connectable.createConnection = (options, callback) => {
      if (health.closed) {
        const error = Object.assign(
          new Error("[tracing-otel] the exporter was shut down; nothing more is sent"),
          { code: closedCode },
        );
        if (typeof callback !== "function") throw error;
        queueMicrotask(() => callback(error, undefined));
        return undefined;
      }
      const socket = create(options, callback);
      socket?.on("error", (error: NodeJS.ErrnoException) => {
        if (error.code !== undefined && downCodes.has(error.code)) health.markDown(error);
      });
      return socket;
    };
    health.onClose(() => agent.destroy());
    return agent;
  };
}

type CreateConnection = (
  options: unknown,
  callback?: (error: Error | null, socket: Socket | undefined) => void,
) => Socket | undefined;
