import { createKeyring, envKeyProvider, generateVaultKey } from "@loopguard/redact";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../src/cli.js";
import {
  createSubjectKeysTable,
  postgresRunVault,
  postgresSubjectKeyStore,
  type SqlQueryable,
  vaultKeys,
} from "../src/run-vault.js";

// pg ships no types of its own; the test needs only a pool's query and end.
type Pool = SqlQueryable & { end(): Promise<void> };
const pgModule = "pg";
const newPool = async (connectionString: string): Promise<Pool> => {
  const { default: pg } = (await import(pgModule)) as {
    default: { Pool: new (options: { connectionString: string }) => Pool };
  };
  return new pg.Pool({ connectionString });
};

const url = process.env.DATABASE_URL;
const schema = `redact_vault_${process.pid}`;

describe.skipIf(!url)("the run vault over PostgreSQL", () => {
  let pool: Pool;
  beforeAll(async () => {
    pool = await newPool(url!);
    await pool.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await createSubjectKeysTable(pool, schema);
    await createSubjectKeysTable(pool, schema); // idempotent
  });
  afterAll(async () => {
    await pool?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pool?.end();
  });

  it("seals rows, reveals them in another worker's vault, and one DELETE forgets the customer for all", async () => {
    const keys = envKeyProvider({ env: { LOOPGUARD_VAULT_KEY: generateVaultKey("k1") } });
    const keyring = () => createKeyring({ keys, store: postgresSubjectKeyStore(pool, schema) });
    const rows: string[] = [];
    const first = await postgresRunVault({
      keyring: keyring(),
      runId: "run-1",
      subject: "cust_42",
      lines: [],
      onSealed: (line) => rows.push(line),
    });
    const text = first.tokenize("refund jane@acme.io, card 4111 1111 1111 1111");
    expect(rows).toHaveLength(2);
    for (const row of rows) expect(row).not.toMatch(/jane|4111/);
    const { rows: stored } = await pool.query(`SELECT * FROM "${schema}".subject_keys`);
    expect(stored.map((row: Record<string, unknown>) => row.subject)).toEqual(["cust_42"]);
    expect(JSON.stringify(stored)).not.toMatch(/jane|4111/);

    const second = await postgresRunVault({
      keyring: keyring(),
      runId: "run-1",
      subject: "cust_42",
      lines: rows,
      onSealed: (line) => rows.push(line),
    });
    expect(second.reveal(text)).toBe("refund jane@acme.io, card 4111 1111 1111 1111");

    expect(await keyring().forget("cust_42")).toBe(true);
    const after = await postgresRunVault({
      keyring: keyring(),
      runId: "run-1",
      subject: "cust_42",
      lines: rows,
      onSealed: (line) => rows.push(line),
    });
    expect(() => after.reveal(text)).toThrow(
      /^\[redact\] <EMAIL_1> cannot be revealed: its subject "cust_42" was forgotten/,
    );
    expect(after.tokenize("mail new@acme.io")).toBe("mail <EMAIL_2>");
  });

  it("loopguard forget <subject> --connection deletes the subject's key in the fleet's database", async () => {
    await pool.query(
      `CREATE TABLE IF NOT EXISTS "${schema}".vault_entries (run_id text NOT NULL, seq integer NOT NULL, entry text NOT NULL, epoch bigint NOT NULL, PRIMARY KEY (run_id, seq))`,
    );
    // The CLI reads the master key as the workers do: LOOPGUARD_VAULT_KEY, else the key file.
    const keys = vaultKeys(".loopguard/vault");
    const keyring = createKeyring({ keys, store: postgresSubjectKeyStore(pool, schema) });
    const lines: string[] = [];
    const vault = await postgresRunVault({
      keyring,
      runId: "run-9",
      subject: "cust_9",
      lines: [],
      onSealed: (line) => lines.push(line),
    });
    vault.tokenize("mail nine@acme.io");
    for (const [seq, entry] of lines.entries())
      await pool.query(`INSERT INTO "${schema}".vault_entries VALUES ($1, $2, $3, 1)`, [
        "run-9",
        seq,
        entry,
      ]);
    const out: string[] = [];
    const code = await main(
      ["forget", "cust_9", "--connection", url!, "--schema", schema, "--no-color"],
      (line) => out.push(line),
    );
    expect(code).toBe(0);
    expect(out.join("\n")).toMatch(/forgot cust_9: its key is deleted; 1 value\(s\) in 1 run\(s\)/);
    const { rows } = await pool.query(
      `SELECT * FROM "${schema}".subject_keys WHERE subject = 'cust_9'`,
    );
    expect(rows).toEqual([]);
  });
});
