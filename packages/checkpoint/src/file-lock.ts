import { randomBytes } from "node:crypto";
import { close, open, readFileSync, write } from "node:fs";
import { readFile, stat, unlink } from "node:fs/promises";
import { hostname } from "node:os";
import { RunLockedError } from "./store-errors.js";

/** A held lock: release it exactly once. */
export interface FileLock {
  release(): Promise<void>;
}

/** Runs a step that opens and closes a descriptor, under the caller's descriptor budget. */
export type DescriptorScope = <T>(what: string, work: () => Promise<T>) => Promise<T>;

/** Who holds a lock, as written in the lock file. */
interface Holder {
  pid: number;
  host: string;
  token: string;
  /** The kernel's boot id (Linux), so a lock left before a reboot is stale even if its pid was reused. */
  boot?: string;
}

/** Tokens of the locks this process holds right now (a lock of this pid with another token leaked). */
const heldHere = new Set<string>();
const host = hostname();
const boot = bootId();
/** A lock file with no readable holder older than this was left by a writer that died creating it. */
const unreadableStaleMs = 5_000;

/**
 * Takes an exclusive lock by creating `path` with `O_EXCL` (`open(path, "wx")`) and writing the
 * holder (pid, host, a random token) into it. Waits, with backoff, while another live writer
 * holds it; breaks a lock whose holder is a dead process on this host (a crash while holding
 * it), under a second short lock so two breakers cannot both break it. Rejects with
 * `RunLockedError` after `timeoutMs`.
 *
 * Liveness is checked with the pid, so the lock protects writers on one host (or one shared
 * filesystem where every writer runs on the same host); a holder on another host is waited for
 * and never broken.
 */
export async function acquireFileLock(
  path: string,
  timeoutMs: number,
  io: DescriptorScope = (_what, work) => work(),
): Promise<FileLock> {
  const token = randomBytes(9).toString("base64url");
  const content = JSON.stringify({
    pid: process.pid,
    host,
    token,
    ...(boot ? { boot } : {}),
  } satisfies Holder);
  const started = Date.now();
  let delayMs = 1;
  for (;;) {
    if (await io(`creating ${path}`, () => tryCreate(path, content))) {
      heldHere.add(token);
      let released = false;
      return {
        async release() {
          if (released) return;
          released = true;
          heldHere.delete(token);
          await unlink(path).catch(ignoreMissing);
        },
      };
    }
    const holder = await io(`reading ${path}`, () => readHolder(path));
    if (holder === "gone") continue;
    if (await isStale(path, holder)) {
      await io(`breaking ${path}`, () => breakStale(path, holder));
      continue;
    }
    const waited = Date.now() - started;
    if (waited >= timeoutMs) {
      throw new RunLockedError(
        path,
        holder === "unreadable"
          ? "a writer that has not written its pid yet"
          : `process ${holder.pid} on ${holder.host}`,
        waited,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, delayMs * (0.5 + Math.random())));
    delayMs = Math.min(delayMs * 2, 25);
  }
}

/**
 * Creates `path` with `content` unless it exists (false then). Raw descriptors through the
 * callback API: a lock is taken and given back for every burst of appends of every run.
 */
async function tryCreate(path: string, content: string): Promise<boolean> {
  let fd: number;
  try {
    fd = await new Promise<number>((resolve, reject) =>
      open(path, "wx", 0o600, (error, opened) => (error ? reject(error) : resolve(opened))),
    );
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  }
  const closeIt = () =>
    new Promise<void>((resolve, reject) =>
      close(fd, (error) => (error ? reject(error) : resolve())),
    );
  try {
    const bytes = Buffer.from(content, "utf8");
    const written = await new Promise<number>((resolve, reject) =>
      write(fd, bytes, 0, bytes.length, 0, (error, count) =>
        error ? reject(error) : resolve(count),
      ),
    );
    if (written !== bytes.length) throw new Error(`short write of ${path}`);
  } catch (error) {
    await closeIt().catch(() => undefined);
    await unlink(path).catch(ignoreMissing);
    throw error;
  }
  await closeIt();
  return true;
}

async function readHolder(path: string): Promise<Holder | "gone" | "unreadable"> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return "gone";
    throw error;
  }
  try {
    const parsed = JSON.parse(text) as Partial<Holder>;
    if (
      typeof parsed.pid === "number" &&
      typeof parsed.host === "string" &&
      typeof parsed.token === "string"
    ) {
      return {
        pid: parsed.pid,
        host: parsed.host,
        token: parsed.token,
        ...(typeof parsed.boot === "string" ? { boot: parsed.boot } : {}),
      };
    }
  } catch {
    // A holder between create and write, or one that died there: judged by age below.
  }
  return "unreadable";
}

async function isStale(path: string, holder: Holder | "unreadable"): Promise<boolean> {
  if (holder === "unreadable") {
    try {
      return Date.now() - (await stat(path)).mtimeMs > unreadableStaleMs;
    } catch {
      return false;
    }
  }
  if (holder.host !== host) return false;
  if (boot && holder.boot && holder.boot !== boot) return true;
  if (holder.pid === process.pid) return !heldHere.has(holder.token);
  return !isAlive(holder.pid);
}

/** Who this process is, as a lease holder with a fresh token (for leases kept outside files). */
export function newHolder(): { pid: number; host: string; token: string; boot?: string } {
  return {
    pid: process.pid,
    host,
    token: randomBytes(9).toString("base64url"),
    ...(boot ? { boot } : {}),
  };
}

/** Marks a holder's token as held (or no longer held) by this process. */
export function markHeld(token: string, held: boolean): void {
  if (held) heldHere.add(token);
  else heldHere.delete(token);
}

/**
 * Whether a recorded holder is gone: a dead process on this host, one from before a reboot,
 * or this process under a token it no longer holds. A holder on another host is never judged
 * gone (its pid means nothing here).
 */
export function holderIsGone(holder: unknown): boolean {
  if (typeof holder !== "object" || holder === null) return true;
  const { pid, host: at, token, boot: bootOf } = holder as Partial<Holder>;
  if (typeof pid !== "number" || typeof at !== "string" || typeof token !== "string") return true;
  if (at !== host) return false;
  if (boot && bootOf && bootOf !== boot) return true;
  if (pid === process.pid) return !heldHere.has(token);
  return !isAlive(pid);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Removes a stale lock. Under `<path>.break` (itself an `O_EXCL` file), the holder is read
 * again and the lock removed only if it is still the same dead holder: without this, two
 * processes that both saw the stale lock could each remove it, the second removing the
 * lock the first had just taken.
 */
async function breakStale(path: string, seen: Holder | "unreadable"): Promise<void> {
  const breakPath = `${path}.break`;
  if (!(await tryCreate(breakPath, JSON.stringify({ pid: process.pid, host, token: "break" })))) {
    // Someone else is breaking it; a break lock left by a breaker that died is removed by age.
    try {
      if (Date.now() - (await stat(breakPath)).mtimeMs > unreadableStaleMs)
        await unlink(breakPath).catch(ignoreMissing);
    } catch {
      // Gone already.
    }
    await new Promise((resolve) => setTimeout(resolve, 2));
    return;
  }
  try {
    const now = await readHolder(path);
    const same =
      now === "unreadable"
        ? seen === "unreadable" && (await isStale(path, "unreadable"))
        : now !== "gone" && seen !== "unreadable" && now.token === seen.token;
    if (same) await unlink(path).catch(ignoreMissing);
  } finally {
    await unlink(breakPath).catch(ignoreMissing);
  }
}

function ignoreMissing(error: unknown): void {
  if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
}

function bootId(): string | undefined {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim() || undefined;
  } catch {
    return undefined;
  }
}
