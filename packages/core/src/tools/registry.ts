import type { LanguageModelV4FunctionTool } from "@ai-sdk/provider";
import { DuplicateToolError, InvalidConfigError } from "../errors.js";
import type { Tool } from "./define-tool.js";

/** Tools by name, kept in registration order (which is the order the model sees them in). */
export class ToolRegistry {
  readonly #tools = new Map<string, Tool>();
  #modelTools: LanguageModelV4FunctionTool[] | undefined;

  constructor(tools: Iterable<Tool> = []) {
    for (const tool of tools) this.register(tool);
  }

  /** Adds tools; a name that is already taken is an error (the Go registry silently overwrote). */
  register(...tools: Tool[]): this {
    for (const tool of tools) {
      if (tool === null || typeof tool !== "object" || !("jsonSchema" in tool))
        throw new InvalidConfigError("ToolRegistry.register() takes tools made with defineTool().");
      if (this.#tools.has(tool.name)) throw new DuplicateToolError(tool.name);
      this.#tools.set(tool.name, tool);
    }
    this.#modelTools = undefined;
    return this;
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
