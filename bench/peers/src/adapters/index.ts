import type { Adapter } from "../types.js";

/** A variant's name and packages, known without loading its framework. */
export interface Variant {
  id: string;
  label: string;
  packages: string[];
  /** Loads the adapter (and with it the framework) on first use: a child process loads only what it runs. */
  load: () => Promise<Adapter>;
}

/** Every variant, in report order: the floor first, agent-core second (then its listener-read variant). */
export const adapters: Variant[] = [
  {
    id: "floor",
    label: "bare doStream() loop (floor)",
    packages: ["@ai-sdk/provider"],
    load: async () => (await import("./floor.js")).floor,
  },
  {
    id: "agent-core",
    label: "agent-core",
    packages: [],
    load: async () => (await import("./agent-core.js")).agentCore,
  },
  {
    id: "agent-core-on",
    label: "agent-core, agent.on listener",
    packages: [],
    load: async () => (await import("./agent-core.js")).agentCoreListener,
  },
  {
    id: "pi",
    label: "pi agent-core",
    packages: ["@mariozechner/pi-agent-core", "@mariozechner/pi-ai"],
    load: async () => (await import("./pi.js")).pi,
  },
  {
    id: "pi-v4",
    label: "pi agent-core, model over doStream()",
    packages: ["@mariozechner/pi-agent-core", "@mariozechner/pi-ai", "@ai-sdk/provider"],
    load: async () => (await import("./pi.js")).piOverV4,
  },
  {
    id: "ai-sdk",
    label: "AI SDK ToolLoopAgent.stream",
    packages: ["ai"],
    load: async () => (await import("./ai-sdk.js")).aiSdk,
  },
  {
    id: "openai-agents",
    label: "OpenAI Agents SDK run(stream)",
    packages: ["@openai/agents"],
    load: async () => (await import("./openai-agents.js")).openaiAgents,
  },
  {
    id: "langgraph",
    label: "LangGraph createReactAgent.invoke",
    packages: ["@langchain/langgraph", "@langchain/core"],
    load: async () => (await import("./langgraph.js")).langgraph,
  },
];

/** The adapter of variant `id`, loaded. */
export async function adapter(id: string): Promise<Adapter> {
  const found = adapters.find((a) => a.id === id);
  if (!found) throw new RangeError(`unknown variant ${id}; known: ${adapters.map((a) => a.id).join(", ")}`);
  return found.load();
}
