import type { CallToolResult, ContentBlock } from "@modelcontextprotocol/sdk/types.js";

/**
 * An MCP tool's answer as an agent-core tool's value, which the model reads as text (a string as
 * it is, anything else as JSON): its `structuredContent` when it has one (the data the tool's
 * `outputSchema` describes; the text beside it is, by the spec, that data serialized again),
 * else its content blocks as text, one per line. Throws an `Error` with that text for
 * `isError: true`, so the call gets an error result the model can read.
 */
export function toolValueOf(result: CallToolResult, toolName: string): unknown {
  const text = result.content.map(textOf).join("\n");
  if (result.isError === true) {
    const detail = text || (result.structuredContent && JSON.stringify(result.structuredContent));
    throw new Error(detail || `The tool "${toolName}" failed without saying why.`);
  }
  return result.structuredContent ?? text;
}

/**
 * One content block as the model reads it. agent-core gives models text results, so images,
 * audio and binary resources are named, not sent: their base64 would cost tokens and say nothing.
 */
function textOf(block: ContentBlock): string {
  switch (block.type) {
    case "text":
      return block.text;
    case "image":
    case "audio":
      return `[${block.type} (${block.mimeType}) not shown: agent-core gives the model text results]`;
    case "resource_link":
      return `[resource ${block.uri}${block.name ? ` "${block.name}"` : ""}${block.description ? `: ${block.description}` : ""}]`;
    case "resource":
      return "text" in block.resource
        ? `[resource ${block.resource.uri}]\n${block.resource.text}`
        : `[resource ${block.resource.uri} (${block.resource.mimeType ?? "binary"}) not shown: agent-core gives the model text results]`;
  }
}
