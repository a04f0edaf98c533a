/**
 * `submitRun` over a connection string through a database outage, against the real PostgreSQL:
 * the client reaches the server through a loopback TCP proxy that the test takes down (new
 * connections refused, open ones reset: what a restart looks like to a client) and brings back,
 * or that drops the server's answer to the job's INSERT after the server committed it (a reset
 * between commit and answer). Each time the call must end with the run queued exactly once.
 * Connections are reused across calls (one pool per connection string).
 */
import { connect, createServer, type Server, type Socket } from "node:net";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresStoreError } from "../../src/postgres-errors.js";
import { closeSubmitConnections } from "../../src/submit-connections.js";
import { submitRun } from "../../src/worker-submit-run.js";
import { databaseUrl, dropSchema, freshSchema } from "./database.js";

/** A TCP proxy to PostgreSQL that can refuse, reset, and drop one answer. */
async function pgProxy(target: URL) {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let cutOn: string | undefined;
  let cuts = 0;
  const port = await new Promise<number>((resolve) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
  const up = () =>
    new Promise<void>((resolve) => {
      server = createServer((client) => {
        const upstream = connect(Number(target.port), target.hostname);
        sockets.add(client);
        sockets.add(upstream);
        let armed = false;
        client.on("data", (chunk) => {
          if (cutOn && chunk.includes(cutOn)) {
            cutOn = undefined;
            armed = true;
          }
          upstream.write(chunk);
        });
        upstream.on("data", (chunk) => {
          if (armed) {
            // The server has answered (so committed): the answer is lost, the connection reset.
            cuts += 1;
            client.resetAndDestroy();
            upstream.destroy();
            return;
          }
          client.write(chunk);
        });
        const end = () => {
          client.destroy();
          upstream.destroy();
          sockets.delete(client);
          sockets.delete(upstream);
        };
        client.on("error", end).on("close", end);
        upstream.on("error", end).on("close", end);
      });
      server.listen(port, "127.0.0.1", resolve);
    });
  await up();
  const url = new URL(target);
  url.hostname = "127.0.0.1";
  url.port = String(port);
  return {
    url: url.toString(),
    up,
    /** Refuses new connections and resets the open ones. */
    async down() {
      const closing = new Promise((resolve) => server?.close(resolve));
      for (const socket of sockets) socket.resetAndDestroy();
      await closing;
    },
    /** Drops the server's answer to the next request that contains `text`. */
    cutAfter(text: string) {
      cutOn = text;
    },
    get cuts() {
      return cuts;
    },
    async close() {
      await this.down();
    },
  };
}

describe.skipIf(!databaseUrl)("submitRun through a database outage (real PostgreSQL)", () => {
  const schema = freshSchema("lg_submit_outage");
  let proxy: Awaited<ReturnType<typeof pgProxy>>;
  let direct: pg.Client;
  // Far above any machine's pace: the outage ends long before the retries would.
  const retry = { maxAttempts: 100, baseDelayMs: 20, maxDelayMs: 500 };
  const jobsOf = async (runId: string) =>
    (
      await direct.query(`SELECT id FROM "${schema}_boss".job WHERE singleton_key = $1`, [runId])
    ).rows.map((row) => String(row.id));

  beforeAll(async () => {
    proxy = await pgProxy(new URL(databaseUrl!));
    direct = new pg.Client({ connectionString: databaseUrl });
    await direct.connect();
  });
  afterAll(async () => {
    await closeSubmitConnections();
    await proxy?.close();
    await direct?.end();
    await dropSchema(`${schema}_boss`);
    await dropSchema(schema);
  });

  it("the server goes away mid-submit and comes back: the call retries and the run is queued exactly once", async () => {
    const target = { connectionString: proxy.url, schema, retry };
    // Warm: the pool, the store and pg-boss are made once and reused.
    const first = await submitRun(target, "Refund A1", { runId: "run_warm" });
    expect(first.jobId).not.toBeNull();
    await proxy.down();
    const pending = submitRun(target, "Refund A2", { runId: "run_outage" });
    // The call started while nothing could connect: it can only succeed by retrying once the
    // proxy is back (a few refused attempts happen meanwhile; how many does not matter).
    await new Promise((resolve) => setTimeout(resolve, 300));
    await proxy.up();
    const submitted = await pending;
    expect(submitted.runId).toBe("run_outage");
    expect(await jobsOf("run_outage")).toEqual([submitted.jobId]);
    expect(await jobsOf("run_warm")).toEqual([first.jobId]);
  }, 120_000);

  it("the answer to the job's INSERT is lost after the commit: the retry reuses the job id, one job, its id returned", async () => {
    const target = { connectionString: proxy.url, schema, retry };
    await submitRun(target, "warm up", { runId: "run_warm_2" });
    proxy.cutAfter("INSERT INTO");
    const submitted = await submitRun(target, "Refund A3", { runId: "run_lost_answer" });
    expect(proxy.cuts).toBe(1);
    const jobs = await jobsOf("run_lost_answer");
    expect(jobs).toHaveLength(1);
    expect(submitted.jobId).toBe(jobs[0]);
  }, 120_000);

  it("with retry: false a connection error fails the call at once with a [checkpoint] error that says what to do, and no job", async () => {
    await proxy.down();
    try {
      const error = await submitRun(
        { connectionString: proxy.url, schema, retry: false },
        "Refund A4",
        { runId: "run_no_retry" },
      ).catch((caught: unknown) => caught);
      expect(PostgresStoreError.isInstance(error)).toBe(true);
      expect(String((error as Error).message)).toMatch(
        /^\[checkpoint\] submitRun: cannot reach PostgreSQL at 127\.0\.0\.1:\d+\/loopguard_test after 1 attempt\(s\) \(.*(ECONNREFUSED|ECONNRESET).*\); run run_no_retry may or may not be queued: submit it again with the same runId/,
      );
    } finally {
      await proxy.up();
    }
    expect(await jobsOf("run_no_retry")).toEqual([]);
  }, 120_000);
});
