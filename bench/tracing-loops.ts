import "@agent-core/agentic";
import { Agent, noTracing, openTelemetryTracing, rootContainer, TRACING } from "@agent-core/core";
import type { LanguageModelV4 } from "@ai-sdk/provider";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { addTool, runAgent } from "./loops.js";

/**
 * The same agentic run three ways, for the tracing workloads: tracing turned off (`noTracing`, no
 * run span asked for at all), the default with no tracer provider registered (what every user who
 * does not trace runs), and tracing on into the SDK's in-memory exporter (emptied after each run).
 */
export type TracingMode = "off" | "no provider" | "in-memory exporter";

type DependencyContainer = typeof rootContainer;

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });

const containers: Record<TracingMode, DependencyContainer> = {
  off: withTracing(noTracing),
  // The root container's default: the global provider, none registered in the bench.
  "no provider": rootContainer,
  "in-memory exporter": withTracing(openTelemetryTracing({ tracerProvider: provider })),
};

function withTracing(tracing: typeof noTracing): DependencyContainer {
  const container = rootContainer.createChildContainer();
  container.registerInstance(TRACING, tracing);
  return container;
}

/** One run of `cycles` tool cycles (0: one model call answering with text) on a fresh agent. */
export async function tracedRun(model: LanguageModelV4, cycles: number, mode: TracingMode): Promise<string> {
  const agent = new Agent({
    provider: model,
    tools: [addTool],
    limits: { maxCycles: cycles + 2 },
    container: containers[mode],
  });
  const text = await runAgent(agent);
  exporter.reset();
  return text;
}
