import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { mkdir, open, rename, stat, unlink, writeFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { InvalidArgumentError } from "@loopguard/core";
import { FreezeStoreError } from "./errors.js";
import { type FreezeFile, parseFreezeFile } from "./freeze-file.js";
import type { FreezeRequest, FreezeStatus, FreezeStore } from "./freeze-store.js";
import { describeValue } from "./predicate.js";

/** Options of `fileFreezeStore()`. */
export interface FileFreezeStoreOptions {
  /** The JSON file, e.g. `.loopguard/freeze.json`. A missing file means not frozen. */
  path: string;
  /** How long a read status is reused, in ms. Default 250; 0 checks the file (one `stat`) on every call. */
  cacheMs?: number;
  /** The clock (epoch ms), for the cache and `at`. Default `Date.now`. */
  now?: () => number;
}

/**
 * A freeze store in one JSON file, for the processes of one machine. Reads are cached for
 * `cacheMs` (then a `stat` tells whether the file changed), so a check costs nothing most of the
 * time; a freeze from another process is seen within `cacheMs`. Writes are atomic (temporary
 * file and rename). A file that cannot be read or parsed makes `status()` reject: the kill
 * switch then refuses every call (fail closed).
 *
 * @example
 * const store = fileFreezeStore({ path: ".loopguard/freeze.json" });
 * await store.freeze({ reason: "refund bug in production", by: "alice" });
 */
export function fileFreezeStore(
  options: FileFreezeStoreOptions,
): FreezeStore & { readonly path: string } {
  if (
    options === null ||
    typeof options !== "object" ||
    typeof options.path !== "string" ||
    options.path.trim() === ""
  ) {
    throw new InvalidArgumentError(
      '[policy] fileFreezeStore({ path }): path must be the freeze file, e.g. ".loopguard/freeze.json"',
    );
  }
  const cacheMs = options.cacheMs ?? 250;
  if (typeof cacheMs !== "number" || !Number.isFinite(cacheMs) || cacheMs < 0) {
    throw new InvalidArgumentError(
      `[policy] fileFreezeStore({ cacheMs }): cacheMs must be a number of milliseconds >= 0, got ${describeValue(cacheMs)}`,
    );
  }
  if (options.now !== undefined && typeof options.now !== "function")
    throw new InvalidArgumentError(
      "[policy] fileFreezeStore({ now }): now must be a function returning epoch milliseconds",
    );
  const now = options.now ?? Date.now;
  const path = resolve(options.path);
  let cached: { status: FreezeStatus; checkedMs: number; signature: string } | undefined;
  let pending: Promise<FreezeStatus> | undefined;

  // No file means not frozen; any other failure to read it is an error (calls are then refused).
  const missingOrThrow = (error: unknown): FreezeStatus => {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") {
      cached = { status: { frozen: false }, checkedMs: now(), signature: "missing" };
      return cached.status;
    }
    throw new FreezeStoreError(
      `[policy] cannot read the freeze file ${path}: ${(error as Error).message}; fix its permissions (calls are refused until it can be read)`,
      { cause: error },
    );
  };
  const load = async (): Promise<FreezeStatus> => {
    let signature: string;
    try {
      const info = await stat(path);
      if (!info.isFile()) throw notRegular(path);
      signature = `${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}`;
    } catch (error) {
      if (error instanceof FreezeStoreError) throw error;
      return missingOrThrow(error);
    }
    if (cached && cached.signature === signature) {
      cached.checkedMs = now();
      return cached.status;
    }
    let text: string;
    try {
      text = await readBounded(path);
    } catch (error) {
      if (error instanceof FreezeStoreError) throw error;
      return missingOrThrow(error);
    }
    const status = parseFreezeFile(text, path);
    cached = { status, checkedMs: now(), signature };
    return status;
  };

  const write = async (content: FreezeFile) => {
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    const temporary = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
    try {
      await writeFile(temporary, `${JSON.stringify(content, null, 2)}\n`, {
        encoding: "utf8",
        mode: 0o600,
      });
      await rename(temporary, path);
    } catch (error) {
      await unlink(temporary).catch(() => undefined);
      throw new FreezeStoreError(
        `[policy] cannot write the freeze file ${path}: ${(error as Error).message}`,
        { cause: error },
      );
    }
    cached = undefined;
  };

  return {
    name: "file",
    path,
    status() {
      if (cached && now() - cached.checkedMs < cacheMs) return Promise.resolve(cached.status);
      // Concurrent checks share one read.
      pending ??= load().finally(() => {
        pending = undefined;
      });
      return pending;
    },
    async freeze(request: FreezeRequest) {
      if (
        request === null ||
        typeof request !== "object" ||
        typeof request.reason !== "string" ||
        request.reason.trim() === "" ||
        (request.by !== undefined && typeof request.by !== "string")
      ) {
        throw new InvalidArgumentError(
          '[policy] freeze({ reason, by }): give a non-empty reason and who is freezing, e.g. { reason: "refund bug", by: "alice" }',
        );
      }
      await write({
        version: 1,
        frozen: true,
        reason: request.reason,
        ...(request.by ? { by: request.by } : {}),
        at: new Date(now()).toISOString(),
      });
    },
    async unfreeze(unfreezeOptions: { by?: string } = {}) {
      await write({
        version: 1,
        frozen: false,
        ...(typeof unfreezeOptions.by === "string" ? { by: unfreezeOptions.by } : {}),
        at: new Date(now()).toISOString(),
      });
    },
  };
}

/** The longest a freeze file may be, and how long reading it may take. */
const maxFreezeBytes = 64 * 1024;
const readTimeoutMs = 2_000;

function notRegular(path: string): FreezeStoreError {
  return new FreezeStoreError(
    `[policy] the freeze file ${path} is not a regular file (a FIFO, device or directory would hang or mislead every run); replace it with a JSON file or remove it (calls are refused until then)`,
  );
}

/**
 * Reads the freeze file without ever hanging a run: opened non-blocking (a FIFO swapped in
 * after the stat cannot block the open), checked to be a regular file through the open handle,
 * at most 64 KiB, within 2 s.
 */
async function readBounded(path: string): Promise<string> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw notRegular(path);
    if (info.size > maxFreezeBytes)
      throw new FreezeStoreError(
        `[policy] the freeze file ${path} is ${info.size} bytes; a freeze file is a small JSON object (at most ${maxFreezeBytes} bytes): replace it (calls are refused until then)`,
      );
    return await handle.readFile({ encoding: "utf8", signal: AbortSignal.timeout(readTimeoutMs) });
  } catch (error) {
    if ((error as Error)?.name === "AbortError" || (error as Error)?.name === "TimeoutError")
      throw new FreezeStoreError(
        `[policy] reading the freeze file ${path} took over ${readTimeoutMs} ms; calls are refused until it can be read`,
        { cause: error },
      );
    throw error;
  } finally {
    await handle.close();
  }
}
