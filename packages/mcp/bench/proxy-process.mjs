// The proxy as its own process for the bench (as `loopguard mcp-proxy` runs it): stdin/stdout
// are the host's link. `node proxy-process.mjs <bare|gates> -- <command> [args...]`.
import { defaultScanner, quarantine, taintGate } from "@loopguard/injection";
import { allow, argDomainNotIn, deny, policy, runGuard } from "@loopguard/policy";
import { runMcpProxy } from "../dist/index.js";

const [mode, separator, command, ...args] = process.argv.slice(2);
if (!["bare", "gates"].includes(mode) || separator !== "--" || !command) {
  process.stderr.write("usage: node proxy-process.mjs <bare|gates> -- <command> [args...]\n");
  process.exit(2);
}
const proxy = await runMcpProxy({
  command,
  args,
  log: () => {},
  // The 1 MB result passes whole (the default cuts text past 100,000 characters).
  maxOutputChars: 2_000_000,
  ...(mode === "gates"
    ? {
        policy: policy([
          deny("send_email", { when: argDomainNotIn("to", ["acme-shop.com"]) }),
          allow("*"),
        ]),
        // The bench repeats one call thousands of times: the RunGuard without loop detection.
        gates: [runGuard({ detectLoops: false, noProgress: false }), taintGate()],
        scanner: defaultScanner(),
        envelope: quarantine(),
      }
    : {}),
});
const closed = await proxy.closed;
process.exit(closed.reason === "server_exited" ? 1 : 0);
