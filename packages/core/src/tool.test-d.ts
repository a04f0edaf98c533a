import * as v from "valibot";
import { describe, expectTypeOf, it } from "vitest";
import {
  createAgent,
  type GuardOutcome,
  guardTool,
  type Tool,
  type ToolContext,
  tool,
} from "./index.js";

// Type tests (vitest typecheck): tool() lives on inference, so what it infers is checked here.

const refund = tool({
  name: "issue_refund",
  description: "Refund money to the customer's original payment method.",
  input: v.object({
    order_id: v.string(),
    amount: v.pipe(v.number(), v.minValue(0)),
    reason: v.optional(v.picklist(["damaged", "late", "other"])),
  }),
  run: async (args, context) => {
    expectTypeOf(args).toEqualTypeOf<{
      order_id: string;
      amount: number;
      reason?: "damaged" | "late" | "other" | undefined;
    }>();
    expectTypeOf(context).toEqualTypeOf<ToolContext>();
    expectTypeOf(context.idempotencyKey).toBeString();
    return { refundId: "r_1", amount: args.amount };
  },
});

describe("tool()", () => {
  it("infers the arguments from the valibot schema and the result from run", () => {
    expectTypeOf(refund).toEqualTypeOf<
      Tool<
        { order_id: string; amount: number; reason?: "damaged" | "late" | "other" | undefined },
        { refundId: string; amount: number }
      >
    >();
    expectTypeOf(refund.parse).returns.toMatchTypeOf<
      { ok: true; value: { order_id: string; amount: number } } | { ok: false; issues: string[] }
    >();
  });

  it("refuses a run whose arguments do not match the schema, and a schema that is not an object", () => {
    tool({
      name: "lookup",
      description: "Look an order up.",
      input: v.object({ id: v.string() }),
      // @ts-expect-error id is a string, not a number
      run: async (args: { id: number }) => args.id,
    });
    tool({
      name: "bad",
      description: "Not an object schema.",
      // @ts-expect-error input must be an object schema
      input: v.string(),
      run: async () => "x",
    });
  });

  it("keeps the inferred types through guardTool and into createAgent", () => {
    const guarded = guardTool(refund);
    expectTypeOf(guarded).parameter(0).toEqualTypeOf<{
      order_id: string;
      amount: number;
      reason?: "damaged" | "late" | "other" | undefined;
    }>();
    expectTypeOf(guarded).returns.resolves.toEqualTypeOf<
      GuardOutcome<{ refundId: string; amount: number }>
    >();
    expectTypeOf(createAgent).parameter(0).toHaveProperty("tools");
  });
});
