import type { LanguageModelV4FunctionTool } from "@ai-sdk/provider";
import { DuplicateToolError, InvalidConfigError } from "../errors.js";
import { type AiSdkToolSet, fromAiSdkTools } from "./ai-sdk-tools.js";
import type { Tool } from "./define-tool.js";

/** What a registry takes: tools made with `defineTool()`, or AI SDK `ToolSet`s of `tool()`s. */
export type ToolInput = Tool | AiSdkToolSet;

/** Tools by name, kept in registration order (which is the order the model sees them in). */
export class ToolRegistry {
  readonly #tools = new Map<string, Tool>();
  #modelTools: LanguageModelV4FunctionTool[] | undefined;

  constructor(tools: Iterable<ToolInput> | AiSdkToolSet = []) {
    // An empty registry has nothing to undo: each tool is added as soon as it is checked.
    if (isIterable(tools)) for (const tool of tools) this.#add(toolsOf(tool));
    else this.#add(toolsOf(tools));
  }

  /**
   * Adds tools, and the tools of AI SDK `ToolSet`s (each key is its tool's name); a name that is
   * already taken is an error (the Go registry silently overwrote). All are checked before any is
   * added.
   */
  register(...inputs: ToolInput[]): this {
    const tools = inputs.flatMap(toolsOf);
    const names = new Set<string>();
    for (const { name } of tools) {
      if (this.#tools.has(name) || names.has(name)) throw new DuplicateToolError(name);
      names.add(name);
    }
    for (const tool of tools) this.#tools.set(tool.name, tool);
    this.#modelTools = undefined;
    return this;
  }

  #add(tools: Tool[]): void {
    for (const tool of tools) {
      if (this.#tools.has(tool.name)) throw new DuplicateToolError(tool.name);
      this.#tools.set(tool.name, tool);
    }
  }

  get(name: string): Tool | undefined {
    return this.#tools.get(name);
  }

  has(name: string): boolean {
    return this.#tools.has(name);
  }

  /** Tool names in registration order. */
  names(): string[] {
    return [...this.#tools.keys()];
  }

  all(): Tool[] {
    return [...this.#tools.values()];
  }

  get size(): number {
    return this.#tools.size;
  }

  /** The tools as the v4 model spec wants them; built once per change, not per model call. */
  toModelTools(): readonly LanguageModelV4FunctionTool[] {
    this.#modelTools ??= this.all().map((tool) => ({
      type: "function" as const,
      name: tool.name,
      description: tool.description,
      inputSchema: tool.jsonSchema,
    }));
    return this.#modelTools;
  }
}

/**
 * A tool made with `defineTool()` has a string `name`; a `ToolSet` never does (its values are
 * tools), whatever its tools are called.
 */
function toolsOf(input: ToolInput): Tool[] {
  if (input === null || typeof input !== "object" || Array.isArray(input))
    throw new InvalidConfigError(
      "ToolRegistry.register() takes tools made with defineTool() or AI SDK ToolSets ({ name: tool({ … }) }).",
    );
  if (typeof input.name !== "string") return fromAiSdkTools(input as AiSdkToolSet);
  if (!("jsonSchema" in input))
    throw new InvalidConfigError(
      `ToolRegistry.register() takes tools made with defineTool(): "${input.name}" was not.`,
    );
  return [input as Tool];
}

function isIterable(value: unknown): value is Iterable<unknown> {
  return typeof (value as { [Symbol.iterator]?: unknown } | null)?.[Symbol.iterator] === "function";
}
