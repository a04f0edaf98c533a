// Stand-ins that the READMEs' samples use for the reader's own objects, typed as loopguard
// types, so the docs check (scripts/build-docs.mjs --check) type-checks the samples around them.
import type { Model, Tool } from "@loopguard/core";

// biome-ignore lint/suspicious/noExplicitAny: any tool of the reader's, whatever its arguments
type AnyTool = Tool<any, any>;

declare global {
  /** The reader's model: claudeModel(), or scriptedModel([...]) offline. */
  const model: Model;
  /** The reader's tools. */
  const tools: AnyTool[];
  /** The support desk's tools, as the READMEs name them. */
  const lookupOrder: AnyTool;
  const issueRefund: AnyTool;
  const sendEmail: AnyTool;
  const readTicket: AnyTool;
  /** The reader's order database. */
  const orders: { get(id: string): Promise<unknown> };
  /** The reader's user interface (a chat window, a terminal). */
  const ui: { write(text: string): void; discardStep(): void };
  /** The reader's payments API. */
  const payments: { refund(args: unknown, options: { idempotencyKey: string }): Promise<unknown> };
}
