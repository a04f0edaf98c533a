import * as v from "valibot";
import { describe, expect, it } from "vitest";
import * as errors from "./errors.js";
import { createAgent, tool } from "./index.js";
import { scriptedModel } from "./testing/index.js";

const {
  AmbiguousApprovalError,
  AppendConflictError,
  InvalidArgumentError,
  LoopguardError,
  ModelCallError,
  NoPendingApprovalError,
} = errors;

describe("the error scheme", () => {
  it("gives every class a fixed marker and its own code", () => {
    const classes = Object.values(errors).filter(
      (value): value is typeof InvalidArgumentError =>
        typeof value === "function" && value !== LoopguardError,
    );
    const markers = classes.map((type) => type.marker);
    expect(new Set(markers).size).toBe(classes.length);
    for (const [index, type] of classes.entries())
      expect(markers[index]).toBe(`loopguard.error.${type.name}`);
    const codes = [
      new InvalidArgumentError("[core] x").code,
      new AppendConflictError("r", 0, 1).code,
      new errors.CorruptLogError("[core] x").code,
      new errors.RunNotFoundError("r", "memory").code,
      new errors.UnknownModelPriceError("m", []).code,
      new errors.ToolError("x").code,
      new ModelCallError("bad_request", 400, 1, "[core] x").code,
      new NoPendingApprovalError("r", "completed").code,
      new AmbiguousApprovalError("r", ["a", "b"], undefined).code,
    ];
    expect(new Set(codes).size).toBe(codes.length);
  });

  it("brands from the marker, not the runtime class name, so minified classes still match", () => {
    // A minifier renames classes: the brand and the name must not depend on that.
    const Minified = class extends LoopguardError {
      static override readonly marker: string = "loopguard.error.OriginalError";
      constructor() {
        super("original", "[test] x");
      }
    };
    Object.defineProperty(Minified, "name", { value: "q" });
    const error = new Minified();
    expect(error.name).toBe("OriginalError");
    expect(Minified.isInstance(error)).toBe(true);
    expect(
      (error as unknown as Record<symbol, boolean>)[Symbol.for("loopguard.error.OriginalError")],
    ).toBe(true);
    expect(AppendConflictError.isInstance(error)).toBe(false);
    // A subclass without its own marker is still an instance of its marked parent.
    const Unmarked = { q: class extends AppendConflictError {} }.q;
    expect(AppendConflictError.isInstance(new Unmarked("r", 1, 2))).toBe(true);
    expect(InvalidArgumentError.isInstance(new Unmarked("r", 1, 2))).toBe(false);
  });

  it("lets a subclass carry its own code and marker while staying an instance of its parent", () => {
    class FencedLike extends AppendConflictError {
      static override readonly marker: string = "loopguard.error.FencedLike";
      constructor() {
        super("r", 1, 2, { code: "fenced_like", message: "[test] fenced" });
      }
    }
    const error = new FencedLike();
    expect(error.code).toBe("fenced_like");
    expect(error.message).toBe("[test] fenced");
    expect(error.name).toBe("FencedLike");
    expect(FencedLike.isInstance(error)).toBe(true);
    expect(AppendConflictError.isInstance(error)).toBe(true);
    expect(FencedLike.isInstance(new AppendConflictError("r", 1, 2))).toBe(false);
    expect(LoopguardError.isInstance(error)).toBe(true);
  });

  it("throws ModelCallError when a model call fails for good, and the approval errors from approve()", async () => {
    const rejected = Object.assign(new Error("400 invalid_request_error: bad tools"), {
      status: 400,
    });
    const agent = createAgent({
      model: {
        name: "failing",
        model: "claude-sonnet-5-5",
        create: async () => {
          throw rejected;
        },
      },
      tools: [
        tool({
          name: "noop",
          description: "Does nothing.",
          input: v.object({}),
          run: async () => "ok",
        }),
      ],
      onError: () => undefined,
    });
    const result = await agent.run("go");
    expect(result.status).toBe("failed");
    expect(result.error).toMatch(/^\[core\] the request was rejected as invalid \(400\)/);
    const done = createAgent({
      model: scriptedModel([{ content: [{ type: "text", text: "hi" }] }]),
      tools: [],
    });
    const finished = await done.run("hello");
    const refused = await done
      .approve(finished.runId, { decision: "approve" })
      .catch((error: unknown) => error);
    expect(NoPendingApprovalError.isInstance(refused)).toBe(true);
    expect((refused as errors.LoopguardError).code).toBe("no_pending_approval");
  });
});
