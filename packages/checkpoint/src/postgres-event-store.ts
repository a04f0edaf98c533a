import { chainSettings } from "./hash-chain.js";
import { PostgresAppender } from "./postgres-appender.js";
import { PostgresClaims } from "./postgres-claims.js";
import { PostgresLogReader } from "./postgres-log-reader.js";
import { migrate } from "./postgres-migrations.js";
import {
  lazyPool,
  openPool,
  statementName,
  unreachableError,
  validateConnection,
} from "./postgres-pool.js";

import type { PostgresEventStore, PostgresEventStoreOptions } from "./postgres-store-types.js";

export type {
  FencedEventStore,
  PostgresAppendOptions,
  PostgresEventStore,
  PostgresEventStoreOptions,
} from "./postgres-store-types.js";

/**
 * Creates an EventStore on PostgreSQL: one row per event in `<schema>.events`, a summary per
 * run in `<schema>.runs` updated in the same transaction, and a fencing epoch per run so a
 * worker that lost its claim can never append again. Tables are created and migrated on first
 * use. Needs the optional peer `pg`.
 *
 * @example
 * const store = postgresEventStore({ connectionString: process.env.DATABASE_URL });
 * const agent = createAgent({ model, tools, store });
 * // in a worker: const epoch = await store.claim(runId); createAgent({ ..., store: store.fenced(runId, epoch) })
 */
export function postgresEventStore(options: PostgresEventStoreOptions): PostgresEventStore {
  const where = "postgresEventStore";
  const { schema, quoted } = validateConnection(options, where);
  const chain = chainSettings(options, where);
  // The statements of every slice are prepared once per connection (named), so PostgreSQL
  // parses and plans the append's CTE once, not on every append.
  const names = {
    append: statementName("append_v2", schema),
    claim: statementName("claim", schema),
    claimRead: statementName("claim_read_v2", schema),
    claimReadSlot: statementName("claim_read_slot_v1", schema),
    read: statementName("read_v2", schema),
    readPage: statementName("read_page", schema),
    runRow: statementName("run_row_v2", schema),
  };
  const { ready, close } = lazyPool({
    store: "event",
    schema,
    open: () => openPool(options, where),
    prepare: (pool) => migrate(pool, schema, quoted),
    prepareError: (error) => unreachableError(error, options, where),
  });
  // The concerns, each its own module: append and commit, reading, and claims (fencing epochs).
  const appender = new PostgresAppender({ schema, quoted, chain, ready, names });
  const reader = new PostgresLogReader({ schema, quoted, chain, ready, names });
  const claims = new PostgresClaims({ quoted, ready, names, appender, reader });

  return {
    name: "postgres",
    schema,
    pool: ready,
    async migrate() {
      await ready();
    },
    append: (runId, events, appendOptions) => appender.append(runId, events, appendOptions),
    read: (runId) => reader.read(runId),
    list: (filter) => reader.list(filter),
    claim: (runId) => claims.claim(runId),
    claimAndRead: (runId) => claims.claimAndRead(runId),
    claimAndReadWithSlot: (runId, slot) => claims.claimAndReadWithSlot(runId, slot),
    epochOf: (runId) => claims.epochOf(runId),
    verify: (runId) => reader.verify(runId),
    readBatches: (runId, batchOptions) => reader.readBatches(runId, batchOptions),
    fenced: (runId, epoch) => claims.fenced(runId, epoch),
    close,
  };
}
