import type { InjectionToken } from "tsyringe";
import type { RunObserver } from "./run-observer.js";

/** What a run's tracing knows of it when it starts. */
export interface TracedRun {
  runId: string;
  /** The orchestrator's name. */
  orchestrator: string;
  /** The run's signal: the trace records when and why the run was aborted. */
  signal: AbortSignal;
}

/**
 * How an agent's runs are traced (the `TRACING` service). `startRun` is called as each run starts;
 * it returns the run's observer, or undefined to leave the run untraced, which then costs nothing
 * more: no decorators, no spans, nothing on the hot path.
 */
export interface Tracing {
  startRun(run: TracedRun): RunObserver | undefined;
}

/** How runs are traced; by default through the global `@opentelemetry/api` tracer provider. */
export const TRACING: InjectionToken<Tracing> = Symbol.for("agent-core.Tracing");

/** Traces nothing (register it as `TRACING` to turn tracing off). */
export const noTracing: Tracing = { startRun: () => undefined };
