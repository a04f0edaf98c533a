/**
 * The loopback server's deterministic token count of a Messages API request: one token per 4
 * UTF-8 bytes (rounded up) of each block's JSON without its `cache_control`, summed over the
 * tool definitions, the system prompt and every message block (a string content counts as one
 * text block). It is the count the prompt-cache simulator bills and the one the server's
 * context limit and `count_tokens` endpoint use, so `input_tokens + cache_creation_input_tokens
 * + cache_read_input_tokens` of a reply always equals it.
 *
 * @example
 * loopbackTokenCount({ messages: [{ role: "user", content: "Hi" }] }); // 7
 */
export function loopbackTokenCount(request: unknown): number {
  const body = (request ?? {}) as {
    tools?: unknown;
    system?: unknown;
    messages?: unknown;
  };
  let tokens = 0;
  const add = (block: unknown) => {
    tokens += Math.ceil(Buffer.byteLength(JSON.stringify(withoutCacheControl(block))) / 4);
  };
  if (Array.isArray(body.tools)) for (const spec of body.tools) add(spec);
  if (typeof body.system === "string") add({ type: "text", text: body.system });
  else if (Array.isArray(body.system)) for (const block of body.system) add(block);
  if (Array.isArray(body.messages)) {
    for (const message of body.messages as { content?: unknown }[]) {
      if (typeof message?.content === "string") add({ type: "text", text: message.content });
      else if (Array.isArray(message?.content)) for (const block of message.content) add(block);
    }
  }
  return tokens;
}

function withoutCacheControl(block: unknown): unknown {
  if (block && typeof block === "object" && "cache_control" in block) {
    const { cache_control: _ignored, ...rest } = block as Record<string, unknown>;
    return rest;
  }
  return block;
}
