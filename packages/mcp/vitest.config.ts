import { packageConfig } from "../../vitest.shared.ts";

// The tests start real MCP servers (and the built CLI) as child processes: on a loaded shared
// machine one test can take tens of seconds, so the timeout is far above any machine's pace.
export default packageConfig(import.meta.dirname, { testTimeout: 600_000 });
