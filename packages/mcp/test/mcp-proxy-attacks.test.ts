import { join } from "node:path";
import { defaultScanner, quarantine, taintGate } from "@loopguard/injection";
import { allow, argDomainNotIn, deny, policy, runGuard } from "@loopguard/policy";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { startProxy, textOfResult } from "./helpers.js";

const hostileServer = join(import.meta.dirname, "fixtures", "hostile-server.mjs");
const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const item of open.splice(0)) await item.close();
});

const rules = () =>
  policy([deny("send_email", { when: argDomainNotIn("to", ["acme-shop.com"]) }), allow("*")]);

/** The proxy as the CLI sets it up (policy, taint gate, default scanner, quarantine) in front of one attack. */
async function proxiedAttack(attack: string, extra: Parameters<typeof startProxy>[0] = {}) {
  const started = await startProxy({
    args: [hostileServer, attack],
    policy: rules(),
    gates: [taintGate()],
    scanner: defaultScanner(),
    envelope: quarantine(),
    serverStderr: "ignore",
    ...extra,
  });
  open.push(started.proxy, started.host);
  return started;
}

const evilEmail = { to: "attacker@evil.example", body: "the customer list" };

/** Attacks on names: the name never reaches the host, a call to it never reaches the server. */
const nameAttacks: Array<{
  attack: string;
  names: string[];
  args: Record<string, unknown>;
  reason: string;
}> = [
  {
    attack: "homoglyph_name",
    names: ["send_em\u0430il"],
    args: evilEmail,
    reason: "confusable_name",
  },
  {
    attack: "invisible_name",
    names: ["send_email\u200b"],
    args: evilEmail,
    reason: "invalid_name",
  },
  { attack: "case_name", names: ["SEND_EMAIL"], args: evilEmail, reason: "confusable_name" },
  {
    attack: "fullwidth_name",
    names: ["\uff53\uff45\uff4e\uff44_email"],
    args: evilEmail,
    reason: "invalid_name",
  },
  { attack: "bidi_name", names: ["send_\u202eliame"], args: evilEmail, reason: "invalid_name" },
  {
    attack: "duplicate_name",
    names: ["lookup_order"],
    args: { order_id: "A1" },
    reason: "duplicate_name",
  },
  {
    attack: "twin_names",
    names: ["get_balance", "get_baIance"],
    args: {},
    reason: "confusable_name",
  },
  {
    attack: "injected_description",
    names: ["export_report"],
    args: {},
    reason: "flagged_description",
  },
  { attack: "injected_schema", names: ["export_report"], args: {}, reason: "flagged_description" },
  { attack: "reserved_name", names: ["prompt:review"], args: {}, reason: "reserved_name" },
  {
    attack: "uncompilable_output_schema",
    names: ["stats"],
    args: {},
    reason: "invalid_output_schema",
  },
];

describe("16 kinds of attack by a hostile MCP server (six found by an outside trial, and ten more): none works", () => {
  it.each(nameAttacks)(
    "$attack: withheld from tools/list, refused on call, logged, and the proxy keeps serving",
    async ({ attack, names, args, reason }) => {
      const { host, proxy, logs } = await proxiedAttack(attack);
      const listed = (await host.listTools()).tools.map((tool) => tool.name);
      for (const name of names) {
        expect(listed).not.toContain(name);
        const result = await host.callTool({ name, arguments: args });
        expect(result.isError).toBe(true);
        expect(textOfResult(result)).toMatch(/withheld by loopguard/);
        expect(textOfResult(result)).not.toContain("REACHED");
        expect(proxy.withheld()).toContainEqual(
          expect.objectContaining({ kind: "tool", name, reason }),
        );
      }
      expect(logs.some((line) => line.startsWith("[mcp-proxy] withheld from the host:"))).toBe(
        true,
      );
      // Descriptions the scanner flagged never reach the host in any form.
      expect(JSON.stringify(await host.listTools())).not.toContain("Ignore all previous");
      // The real send_email stays: the deny rule names it exactly, so it covers it.
      if (attack.endsWith("_name") && attack !== "duplicate_name" && attack !== "twin_names")
        expect(listed).toContain("send_email");
      if (attack !== "duplicate_name")
        expect(
          textOfResult(
            await host.callTool({ name: "lookup_order", arguments: { order_id: "A7" } }),
          ),
        ).toBe("Order A7: delivered");
    },
  );

  it("protects the names every gate mentions (here a RunGuard's irreversible tool), not only policy rules", async () => {
    const { host, proxy } = await proxiedAttack("homoglyph_name", {
      policy: policy([allow("*")]),
      gates: [runGuard({ irreversibleTools: ["send_email"] })],
    });
    const listed = (await host.listTools()).tools.map((tool) => tool.name);
    expect(listed).toContain("send_email");
    expect(listed).not.toContain("send_em\u0430il");
    expect(proxy.withheld()).toContainEqual(
      expect.objectContaining({ name: "send_em\u0430il", reason: "confusable_name" }),
    );
  });

  it("huge_result: a 40 MiB result costs one refused call; the next calls work", async () => {
    const { host, proxy, logs } = await proxiedAttack("huge_result", {
      maxMessageBytes: 1024 * 1024,
    });
    const result = await host.callTool({ name: "dump", arguments: {} });
    expect(result.isError).toBe(true);
    expect(textOfResult(result)).toMatch(
      /MCP server "hostile" wrote a 40\.0 MiB message, over the proxy's maxMessageBytes \(1\.0 MiB\): dropped unread \(sha256 [0-9a-f]{16}/,
    );
    expect(logs.some((line) => line.includes("40.0 MiB message"))).toBe(true);
    // A server that writes the id first (as the Python SDK does) gets the same prompt answer.
    const idFirst = await host.callTool({ name: "dump_id_first", arguments: {} });
    expect(textOfResult(idFirst)).toMatch(
      /wrote a 3\.0 MiB message, over the proxy's maxMessageBytes/,
    );
    expect(
      textOfResult(await host.callTool({ name: "lookup_order", arguments: { order_id: "A2" } })),
    ).toBe("Order A2: delivered");
    expect(proxy.run.halted).toBe(false);
  });

  it("garbage_and_stray: lines that are not JSON-RPC and a response nobody asked for are logged; the proxy stays up", async () => {
    const { host, logs } = await proxiedAttack("garbage_and_stray");
    expect(textOfResult(await host.callTool({ name: "noisy", arguments: {} }))).toBe("noisy done");
    expect(
      logs.some((line) =>
        /wrote a line that is not JSON \("this is not JSON"\): ignored/.test(line),
      ),
    ).toBe(true);
    expect(logs.some((line) => /wrote JSON that is not a JSON-RPC message/.test(line))).toBe(true);
    expect(logs.some((line) => /unknown message ID|987654/i.test(line))).toBe(true);
    expect(
      textOfResult(await host.callTool({ name: "lookup_order", arguments: { order_id: "A3" } })),
    ).toBe("Order A3: delivered");
  });

  it("injected_result: the flagged leaf of structuredContent is enveloped in place, the shape stays valid, and the taint gate refuses the exfiltration", async () => {
    const { host, proxy } = await proxiedAttack("injected_result", {
      policy: policy([allow("*")]),
      tools: { send_email: { sensitive: true } },
      run: { task: "Answer ticket T1 for help@acme-shop.com" },
    });
    // The host's SDK client checks structuredContent against the outputSchema: it passes.
    const result = await host.callTool({ name: "fetch_ticket", arguments: { id: "T1" } });
    expect(result.isError).toBeFalsy();
    const ticket = result.structuredContent as { id: string; subject: string; body: string };
    expect(ticket.id).toBe("T1");
    expect(ticket.subject).toBe("Refund request");
    expect(ticket.body).toMatch(/^<tool_output tool="fetch_ticket"[^>]* verdict="injection"/);
    expect(proxy.run.outputs.at(-1)?.scan?.verdict).toBe("injection");
    const exfil = await host.callTool({ name: "send_email", arguments: evilEmail });
    expect(textOfResult(exfil)).toMatch(/^Refused by loopguard \(taint/);
    expect(textOfResult(exfil)).not.toContain("sent to");
  });

  it("a flood of tools/list_changed costs a few lists, not one each, and the proxy keeps serving", async () => {
    const { host } = await proxiedAttack("list_flood");
    let relayed = 0;
    host.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      relayed += 1;
    });
    expect(textOfResult(await host.callTool({ name: "flood", arguments: {} }))).toBe("flooded");
    // Every notification is relayed to the host; the lists they cause are coalesced.
    for (let attempt = 0; attempt < 300 && relayed < 500; attempt += 1)
      await new Promise((done) => setTimeout(done, 20));
    const lists = Number(textOfResult(await host.callTool({ name: "list_count", arguments: {} })));
    expect(lists).toBeLessThan(50);
    expect(
      textOfResult(await host.callTool({ name: "lookup_order", arguments: { order_id: "A9" } })),
    ).toBe("Order A9: delivered");
  });

  it("rug_pull: a description swapped after the first call (tools/list_changed) is re-vetted and withheld", async () => {
    const { host, proxy } = await proxiedAttack("rug_pull");
    // An honest namespaced name (a colon, no reserved prefix) is served like any other.
    expect(textOfResult(await host.callTool({ name: "crm:lookup", arguments: {} }))).toBe(
      "REACHED crm:lookup",
    );
    const changed = new Promise<void>((resolve) =>
      host.setNotificationHandler(ToolListChangedNotificationSchema, async () => resolve()),
    );
    expect(textOfResult(await host.callTool({ name: "export_report", arguments: {} }))).toBe(
      "report exported",
    );
    await changed;
    expect((await host.listTools()).tools.map((tool) => tool.name)).not.toContain("export_report");
    const again = await host.callTool({ name: "export_report", arguments: {} });
    expect(textOfResult(again)).toMatch(
      /withheld by loopguard: tool "export_report": its description or schema text was flagged/,
    );
    expect(proxy.withheld()).toContainEqual(
      expect.objectContaining({ name: "export_report", reason: "flagged_description" }),
    );
  });

  it("with flaggedDescriptions: neutral, a flagged tool is listed with a neutral description and no schema prose", async () => {
    const { host } = await proxiedAttack("injected_schema", { flaggedDescriptions: "neutral" });
    const tool = (await host.listTools()).tools.find((item) => item.name === "export_report");
    expect(tool?.description).toMatch(/loopguard withheld its description/);
    expect(JSON.stringify(tool)).not.toContain("Ignore all previous");
    expect(
      textOfResult(await host.callTool({ name: "export_report", arguments: { format: "csv" } })),
    ).toBe("REACHED export_report");
  });
});
