// What `@loopguard/checkpoint` resolves to on a runtime without a file system or TCP sockets
// (the "workerd", "edge-light" and "browser" export conditions): a clear error at import, not a
// failed resolution of node:fs or pg deep in a bundle.
throw new Error(
  "[checkpoint] @loopguard/checkpoint (jsonlEventStore, sqliteEventStore, postgresEventStore, createWorker, submitRun) needs node:fs, native SQLite or TCP sockets, which this runtime does not have. On Cloudflare Workers use d1EventStore from @loopguard/cloudflare; anywhere, memoryEventStore from @loopguard/core keeps runs in memory (they do not survive a restart).",
);
