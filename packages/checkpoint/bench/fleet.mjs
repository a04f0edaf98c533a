// What the PostgreSQL worker benches share: the database URL (or a clear exit), and worker
// processes started with a JSON line protocol on stdout.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

/** DATABASE_URL, or exits saying how to start the test server. */
export function databaseUrlOrExit() {
  const url = process.env.DATABASE_URL;
  if (!url) {
    console.error('[bench] DATABASE_URL is not set: run eval "$(scripts/postgres.sh start)" first');
    process.exit(1);
  }
  return url;
}

/**
 * Starts `script` (a worker printing one JSON object a line) with `env` added to this process's
 * environment: `lines` collects every line, `errors` those with `event: "error"`, `ready`
 * settles on the `ready` line (rejects, naming `label`, when the process exits first).
 */
export function spawnWorker(script, env, label = "worker") {
  const child = spawn(process.execPath, [script], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lines = [];
  const errors = [];
  const ready = new Promise((done, fail) => {
    child.once("exit", (code) => fail(new Error(`${label} exited with ${code}`)));
    createInterface({ input: child.stdout }).on("line", (text) => {
      const line = JSON.parse(text);
      lines.push(line);
      if (line.event === "ready") done();
      if (line.event === "error") errors.push(line);
    });
  });
  return { child, lines, errors, ready };
}

/**
 * Waits until all `runs` runs in `schema` have completed, polling every 20 ms; returns the
 * steady-state rate in runs per second, from 10 % to 90 % completed (start-up left out).
 */
export async function steadyRate(pool, schema, runs) {
  const marks = new Map();
  const low = Math.ceil(runs * 0.1);
  const high = Math.floor(runs * 0.9);
  for (;;) {
    const { rows } = await pool.query(
      `SELECT count(*)::int AS n FROM "${schema}".runs WHERE status = 'completed'`,
    );
    const done = rows[0].n;
    if (done >= low && !marks.has("low")) marks.set("low", [performance.now(), done]);
    if (done >= high && !marks.has("high")) marks.set("high", [performance.now(), done]);
    if (done >= runs) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const [t0, n0] = marks.get("low");
  const [t1, n1] = marks.get("high");
  return ((n1 - n0) / (t1 - t0)) * 1000;
}
