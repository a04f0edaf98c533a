import { describe, expect, it } from "vitest";
import { createRedactionStream, type RedactionStreamOptions } from "./redaction-stream.js";

async function through(
  chunks: string[],
  options?: RedactionStreamOptions,
): Promise<{ output: string; pieces: string[] }> {
  const stream = createRedactionStream(options);
  const writer = stream.writable.getWriter();
  const writing = (async () => {
    for (const chunk of chunks) await writer.write(chunk);
    await writer.close();
  })();
  const pieces: string[] = [];
  for await (const piece of stream.readable) pieces.push(piece);
  await writing;
  return { output: pieces.join(""), pieces };
}

describe("createRedactionStream", () => {
  it("catches a secret split across chunks", async () => {
    const { output } = await through([
      "my token ghp_wWPw5k4aX",
      "caT4fNP0UcnZ",
      "wJUVFk6LO0pINUx and mail jane@ac",
      "me.io done",
    ]);
    expect(output).toBe("my token [SECRET] and mail [EMAIL] done");
  });

  it("writes text out before the end when there is enough of it", async () => {
    const filler = "lorem ipsum ".repeat(100);
    const { pieces } = await through([filler, filler, "card 4111 1111 ", "1111 1111 end"], {
      holdBack: 64,
    });
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.join("")).toBe(`${filler}${filler}card [CREDIT_CARD] end`);
  });

  it("holds an unterminated private key until its END line", async () => {
    const { output } = await through(
      [
        "-----BEGIN PRIVATE KEY-----\n",
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n".repeat(40),
        "-----END PRIVATE KEY-----\nbye",
      ],
      { holdBack: 64 },
    );
    expect(output).toBe("[SECRET]\nbye");
  });

  it("keeps indexed tokens stable for the whole stream", async () => {
    const { output } = await through(["a@b.io x ", "y a@b.io"], { placeholder: "indexed" });
    expect(output).toBe("<EMAIL_1> x y <EMAIL_1>");
  });

  it("rejects bad options", () => {
    expect(() => createRedactionStream({ holdBack: 0 })).toThrow(
      /holdBack must be a positive integer/,
    );
  });
});
