import { defineTool } from "@agent-core/core";
import { z } from "zod";

// The tools of the page demo (`agent-core serve`): four run in the user's browser, next to the
// page they act on (client tools: the server only declares them); one runs on the server.

const selector = z.string().min(1).describe('A CSS selector, e.g. "h1" or "main p:nth-of-type(2)"');

export const readPage = defineTool({
  name: "read_page",
  description: "Reads the text of the first element of the user's page that matches the selector.",
  inputSchema: z.object({ selector }),
  execution: "client",
});

export const highlight = defineTool({
  name: "highlight",
  description: "Highlights every element of the user's page that matches the selector.",
  inputSchema: z.object({ selector }),
  execution: "client",
});

export const editElement = defineTool({
  name: "edit_element",
  description: "Replaces the text of the first element of the user's page that matches the selector.",
  inputSchema: z.object({ selector, text: z.string() }),
  execution: "client",
});

export const confirmWithUser = defineTool({
  name: "confirm",
  description: "Asks the user a yes/no question on the page; returns { confirmed }.",
  inputSchema: z.object({ question: z.string().min(1) }),
  execution: "client",
});

export const countWords = defineTool({
  name: "count_words",
  description: "Counts the words of a text.",
  inputSchema: z.object({ text: z.string() }),
  execute: ({ text }) => text.split(/\s+/).filter(Boolean).length,
});

export const pageTools = [readPage, highlight, editElement, confirmWithUser, countWords];
