/**
 * A small support-desk workload for the crash tests: look an order up, refund it and email the
 * customer (two side effects in one turn), then answer. Side effects go to a ledger keyed by
 * the idempotency key, as a payment or email API would dedupe them: a call with a key already
 * seen does nothing and returns the first call's result.
 */
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import type { ModelRequest, Tool } from "@loopguard/core";
import { tool } from "@loopguard/core";
import type { ScriptedReply } from "@loopguard/core/testing";
import * as v from "valibot";

/** One side effect, as the ledger recorded it. */
export interface LedgerEntry {
  kind: "refund" | "email" | "ticket";
  key: string;
  detail: string;
}

/** Where side effects land. */
export interface Ledger {
  has(key: string): boolean;
  record(entry: LedgerEntry): void;
  entries(): LedgerEntry[];
}

/** A ledger in memory. */
export function memoryLedger(): Ledger {
  const entries: LedgerEntry[] = [];
  return {
    has: (key) => entries.some((entry) => entry.key === key),
    record: (entry) => void entries.push(entry),
    entries: () => [...entries],
  };
}

/** A ledger in a file, one JSON line per effect (appended with one write, so a SIGKILL cannot tear it). */
export function fileLedger(path: string): Ledger {
  const entries = (): LedgerEntry[] =>
    existsSync(path)
      ? readFileSync(path, "utf8")
          .split("\n")
          .filter((line) => line !== "")
          .map((line) => JSON.parse(line) as LedgerEntry)
      : [];
  return {
    has: (key) => entries().some((entry) => entry.key === key),
    record: (entry) => appendFileSync(path, `${JSON.stringify(entry)}\n`),
    entries,
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The three tools, recording into `ledger`; each sleeps `delayMs` to widen crash windows. */
export function supportDeskTools(ledger: Ledger, options: { delayMs?: number } = {}): Tool<any, any>[] {
  const delayMs = options.delayMs ?? 0;
  const lookupOrder = tool({
    name: "lookup_order",
    description: "Look up an order by its id.",
    input: v.object({ order_id: v.pipe(v.string(), v.description("The order id, e.g. A1001")) }),
    idempotent: true,
    run: async ({ order_id }) => {
      await sleep(delayMs);
      return { order_id, status: "delivered", total: 89.99, customer: "dana@example.com", items: ["kettle"] };
    },
  });
  const issueRefund = tool({
    name: "issue_refund",
    description: "Refund money to the customer's original payment method.",
    input: v.object({ order_id: v.string(), amount: v.number(), reason: v.string() }),
    sensitive: true,
    run: async ({ order_id, amount }, context) => {
      await sleep(delayMs);
      if (!ledger.has(context.idempotencyKey)) ledger.record({ kind: "refund", key: context.idempotencyKey, detail: `${order_id}:${amount}` });
      await sleep(delayMs);
      return { refund_id: `re_${order_id}`, amount, status: "refunded" };
    },
  });
  const sendEmail = tool({
    name: "send_email",
    description: "Send an email to the customer.",
    input: v.object({ to: v.string(), subject: v.string(), body: v.string() }),
    run: async ({ to, subject }, context) => {
      await sleep(delayMs);
      if (!ledger.has(context.idempotencyKey)) ledger.record({ kind: "email", key: context.idempotencyKey, detail: `${to}:${subject}` });
      await sleep(delayMs);
      return { message_id: `msg_${to}`, status: "sent" };
    },
  });
  return [lookupOrder, issueRefund, sendEmail];
}

/** The task of the workload. */
export const supportDeskTask = "Order A1001 arrived broken, refund please 🙏";

/** The final answer of the workload. */
export const supportDeskAnswer = "I refunded $89.99 for order A1001 and emailed you the confirmation.";

/**
 * The model's side of the workload, as a function of the request (so a resumed run, which
 * sends the same conversation, gets the same replies): lookup, then refund and email in one
 * turn, then the answer.
 */
export function supportDeskScript(options: { delayMs?: number } = {}): (request: ModelRequest) => ScriptedReply {
  const delay = options.delayMs ? { delayMs: options.delayMs } : {};
  return (request) => {
    const results = request.messages.flatMap((message) =>
      Array.isArray(message.content) ? message.content.filter((block) => block.type === "tool_result") : [],
    ).length;
    if (results === 0) {
      return {
        ...delay,
        content: [
          { type: "text", text: "Let me look up that order." },
          { type: "tool_use", id: "toolu_lookup", name: "lookup_order", input: { order_id: "A1001" } },
        ],
      };
    }
    if (results === 1) {
      return {
        ...delay,
        content: [
          { type: "text", text: "Sorry about that. Refunding and confirming by email." },
          { type: "tool_use", id: "toolu_refund", name: "issue_refund", input: { order_id: "A1001", amount: 89.99, reason: "arrived broken" } },
          { type: "tool_use", id: "toolu_email", name: "send_email", input: { to: "dana@example.com", subject: "Your refund for A1001", body: "We refunded $89.99." } },
        ],
      };
    }
    return { ...delay, content: supportDeskAnswer };
  };
}
