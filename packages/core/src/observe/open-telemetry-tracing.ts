import { type Tracer, type TracerProvider, trace } from "@opentelemetry/api";
import { ownOptions } from "../config-issues.js";
import { errorMessage, InvalidConfigError } from "../errors.js";
import { RunTrace } from "./run-trace.js";
import type { Tracing } from "./tracing.js";

export interface OpenTelemetryTracingOptions {
  /**
   * Where the spans go. Default: the global tracer provider of `@opentelemetry/api`, looked up
   * at each run, so a provider registered after the agent was made is used.
   */
  tracerProvider?: TracerProvider;
}

const TRACER_NAME = "agent-core";

/**
 * Traces through `@opentelemetry/api`: a span per run, turn, model call and tool call (the GenAI
 * semantic conventions, see docs/observability.md). Each run asks for its run span first; when it
 * does not record (no provider registered, or the sampler dropped it) the run is left untraced.
 */
export function openTelemetryTracing(options: OpenTelemetryTracingOptions = {}): Tracing {
  const tracerProvider = checkedTracerProvider(options);
  if (tracerProvider !== undefined) {
    const tracer = checkedTracer(tracerProvider);
    return { startRun: (run) => RunTrace.start(tracer, run) };
  }
  // The global provider is a proxy that `trace.disable()` replaces: the tracer is asked for again
  // only when it was replaced (asking makes a tracer object while no provider is registered).
  let globalProvider: TracerProvider | undefined;
  let globalTracer: Tracer | undefined;
  return {
    startRun(run) {
      const provider = trace.getTracerProvider();
      if (provider !== globalProvider || globalTracer === undefined) {
        globalProvider = provider;
        globalTracer = provider.getTracer(TRACER_NAME);
      }
      return RunTrace.start(globalTracer, run);
    },
  };
}

/**
 * The options' tracer provider, or undefined for the global one. Options of the wrong kind are
 * refused here, where they are written, rather than as a TypeError of the SDK's at some run; so is
 * a key it does not know, since a misspelt `tracerProvider` would trace to the global provider.
 */
function checkedTracerProvider(options: unknown): TracerProvider | undefined {
  if (typeof options !== "object" || options === null)
    throw new InvalidConfigError("openTelemetryTracing() takes an options object: { tracerProvider? }.");
  const { tracerProvider } = ownOptions("openTelemetryTracing() options", options, ["tracerProvider"]) as {
    tracerProvider?: unknown;
  };
  if (tracerProvider === undefined) return undefined;
  if (
    typeof tracerProvider !== "object" ||
    tracerProvider === null ||
    typeof (tracerProvider as { getTracer?: unknown }).getTracer !== "function"
  )
    throw new InvalidConfigError(
      "openTelemetryTracing(): tracerProvider must be an OpenTelemetry TracerProvider (with a getTracer method), or left out for the global one.",
    );
  return tracerProvider as TracerProvider;
}

/**
 * The provider's tracer, asked for once, here: a `getTracer` that throws or gives no tracer is
 * refused where it is written, rather than leave every run untraced without a word.
 */
function checkedTracer(tracerProvider: TracerProvider): Tracer {
  let tracer: unknown;
  try {
    tracer = tracerProvider.getTracer(TRACER_NAME);
  } catch (error) {
    throw new InvalidConfigError(
      `openTelemetryTracing(): tracerProvider.getTracer() threw: ${errorMessage(error)}`,
    );
  }
  if (typeof (tracer as { startSpan?: unknown } | null)?.startSpan !== "function")
    throw new InvalidConfigError(
      "openTelemetryTracing(): tracerProvider.getTracer() gave no OpenTelemetry Tracer (with a startSpan method).",
    );
  return tracer as Tracer;
}
