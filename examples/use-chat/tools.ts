import { defineTool } from "agent-core";
import { z } from "zod";

/** Runs in the page (no execute): the page's `onToolCall` answers with its `addToolOutput`. */
export const getLocation = defineTool({
  name: "get_location",
  description: "Where the user is, from their browser",
  inputSchema: z.object({}),
  execution: "client",
});

/** Runs on the server, once the user approved it in the page (`addToolApprovalResponse`). */
export const bookTable = defineTool({
  name: "book_table",
  description: "Books a table at a restaurant",
  inputSchema: z.object({ city: z.string(), people: z.number().int().min(1) }),
  needsApproval: true,
  execute: ({ city, people }) => `Table for ${people} in ${city}, tonight at 19:00`,
});
