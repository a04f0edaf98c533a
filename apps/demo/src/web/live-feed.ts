import { freezeState, type WebBackend } from "./backend.js";
import type { RunIndex } from "./run-index.js";

/** One page listening on `/api/live`. */
export interface LiveClient {
  write(text: string): void;
  end(): void;
}

const change = "event: change\ndata: {}\n\n";

/**
 * The pages' live feed: each open page is told (a server-sent `change` event) when the state
 * it rendered is no longer current. While any page listens, the state's signature is polled
 * every `pollMs`; an answer, a halt or a freeze made here announces itself at once.
 */
export class LiveFeed {
  readonly #index: RunIndex;
  readonly #backend: WebBackend;
  readonly #pollMs: number;
  readonly #report: (error: unknown, where: string) => void;
  /** Each live page, with the state it was last told about (its page's version at first). */
  readonly #clients = new Map<LiveClient, string>();
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(parts: {
    index: RunIndex;
    backend: WebBackend;
    pollMs: number;
    report: (error: unknown, where: string) => void;
  }) {
    this.#index = parts.index;
    this.#backend = parts.backend;
    this.#pollMs = parts.pollMs;
    this.#report = parts.report;
  }

  /**
   * Adds a page that rendered the state `since`: a change between its render and this
   * connection is announced at once instead of being taken as the baseline.
   */
  add(client: LiveClient, since: string): void {
    this.#clients.set(client, since);
    this.#start();
    this.#check();
  }

  remove(client: LiveClient): void {
    this.#clients.delete(client);
  }

  /** Tells every page that something changed (after an answer, a halt or a freeze here). */
  notify(runId?: string): void {
    if (runId !== undefined) this.#index.touch(runId);
    for (const client of this.#clients.keys()) client.write(change);
  }

  /** The state a page shows, in one string: the newest run, the waiting count, the fleet. */
  async signature(): Promise<string> {
    const index = this.#index;
    await index.refresh();
    const fleet = await freezeState(this.#backend.freezeStore);
    const newest = index.all()[0];
    return JSON.stringify([
      newest?.updatedAt,
      newest?.runId,
      newest?.status,
      index.filter({ status: "awaiting_approval" }).length,
      index.all().length,
      fleet.frozen,
      fleet.at,
    ]);
  }

  /** Ends every page's feed and stops polling. */
  close(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    for (const client of this.#clients.keys()) client.end();
    this.#clients.clear();
  }

  /** Tells every page whose state differs from `current` to refresh. */
  #announce(current: string): void {
    for (const [client, seen] of this.#clients) {
      if (seen === current) continue;
      this.#clients.set(client, current);
      client.write(change);
    }
  }

  #check(): void {
    this.signature()
      .then((current) => this.#announce(current))
      .catch((error) => this.#report(error, "live feed"));
  }

  #start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => {
      if (this.#clients.size === 0) {
        clearInterval(this.#timer);
        this.#timer = undefined;
        return;
      }
      this.#check();
    }, this.#pollMs);
    this.#timer.unref?.();
  }
}
