// The MCP server the proxy bench fronts (the SDK's low-level Server on stdio): `ping` answers a
// short text; `big` answers a ~1 MB structuredContent (1,000 items of 1,000 characters) that
// matches its outputSchema, with a one-line text part.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const items = Array.from({ length: 1_000 }, (_, index) => ({
  id: `item-${index}`,
  text: `Row ${index}: `.padEnd(1_000, "lorem ipsum dolor sit amet "),
}));
const tools = [
  {
    name: "ping",
    description: "Answers pong.",
    inputSchema: { type: "object", properties: { n: { type: "number" } } },
  },
  {
    name: "big",
    description: "Answers a large structured result.",
    inputSchema: { type: "object", properties: {} },
    outputSchema: {
      type: "object",
      properties: {
        items: {
          type: "array",
          items: {
            type: "object",
            properties: { id: { type: "string" }, text: { type: "string" } },
            required: ["id", "text"],
          },
        },
      },
      required: ["items"],
    },
  },
];
const server = new Server({ name: "bench", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (request) =>
  request.params.name === "big"
    ? { content: [{ type: "text", text: `${items.length} items` }], structuredContent: { items } }
    : { content: [{ type: "text", text: `pong ${request.params.arguments?.n ?? 0}` }] },
);
await server.connect(new StdioServerTransport());
