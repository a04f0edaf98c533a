import { LoopguardError } from "@loopguard/core";

/** A PostgreSQL URL with its password hidden, for messages. */
export function safeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return url.replace(/:\/\/([^:@/]+):[^@/]*@/, "://$1:***@");
  }
}

/** Codes of a failed connection (Node's socket errors and PostgreSQL's login and database errors). */
const connectionCodes: Record<string, string> = {
  ECONNREFUSED: "nothing listens there",
  ENOTFOUND: "the host name does not resolve",
  EAI_AGAIN: "the host name does not resolve",
  ETIMEDOUT: "the connection timed out",
  EHOSTUNREACH: "the host is unreachable",
  ECONNRESET: "the server closed the connection",
  "28P01": "the password was refused",
  "28000": "the role may not log in",
  "3D000": "the database does not exist",
};

/** A connection to the workers' database that failed: says which URL and how to get one. */
export class DatabaseConnectionError extends LoopguardError {
  static override readonly marker: string = "loopguard.error.DatabaseConnectionError";
  constructor(url: string, reason: string, options?: { cause?: unknown }) {
    super(
      "database_connection",
      `[loopguard] could not connect to PostgreSQL at ${safeUrl(url)}: ${reason}.\n` +
        '  Start a local PostgreSQL 15 from a clone of loopguard with: eval "$(scripts/postgres.sh start)"\n' +
        "  (it prints DATABASE_URL), or pass --connection postgres://USER@HOST:PORT/DATABASE.",
      options,
    );
  }
}

/**
 * Runs `work` against the database at `url`; a connection failure anywhere in it (however
 * deep in the error's causes) becomes a `DatabaseConnectionError` naming the URL.
 */
export async function withDatabase<T>(url: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    const reason = connectionFailure(error);
    if (reason) throw new DatabaseConnectionError(url, reason, { cause: error });
    throw error;
  }
}

function connectionFailure(error: unknown, depth = 0): string | undefined {
  if (depth > 6 || error === null || typeof error !== "object") return undefined;
  const { code, message, cause, errors } = error as {
    code?: unknown;
    message?: unknown;
    cause?: unknown;
    errors?: unknown;
  };
  if (typeof code === "string" && code in connectionCodes)
    return `${connectionCodes[code]} (${typeof message === "string" && message !== "" ? message : code})`;
  if (Array.isArray(errors))
    for (const inner of errors) {
      const found = connectionFailure(inner, depth + 1);
      if (found) return found;
    }
  return connectionFailure(cause, depth + 1);
}
