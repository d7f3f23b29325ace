import {
  type Attributes,
  type AttributeValue,
  type Context,
  type Span,
  type SpanContext,
  type SpanOptions,
  TraceFlags,
  type Tracer,
  type TracerProvider,
  trace,
} from "@opentelemetry/api";

/**
 * A tracer provider that keeps every span it starts, as the race suite's cases trace their runs.
 * It is the API's interface and nothing more (an SDK would ignore a second `end()` and so hide it):
 * each span counts its `end()` calls and notes in what order spans ended, for the tracing invariant.
 */

const RUN_ID = "agent_core.run.id";

export interface RecordedSpan {
  name: string;
  spanId: string;
  /** The span of the context it was started in, if it was one of ours. */
  parentSpanId: string | undefined;
  attributes: Attributes;
  ends: number;
  /** The order of its first `end()` among all the case's span ends. */
  endedOrder: number | undefined;
}

export class SpanRecorder {
  readonly spans: RecordedSpan[] = [];
  #ended = 0;

  readonly tracerProvider: TracerProvider = {
    getTracer: () => this.#tracer,
  };

  readonly #tracer: Tracer = {
    startSpan: (name, options, context) => this.#start(name, options, context),
    startActiveSpan: () => {
      throw new Error("the race suite's tracer makes no active spans");
    },
  };

  runIdOf(span: RecordedSpan): AttributeValue | undefined {
    return span.attributes[RUN_ID];
  }

  #start(name: string, options: SpanOptions = {}, context?: Context): Span {
    const parent = context === undefined ? undefined : trace.getSpan(context)?.spanContext();
    const record: RecordedSpan = {
      name,
      spanId: (this.spans.length + 1).toString(16).padStart(16, "0"),
      parentSpanId: parent?.spanId,
      attributes: { ...options.attributes },
      ends: 0,
      endedOrder: undefined,
    };
    this.spans.push(record);
    const spanContext: SpanContext = {
      traceId: "0".repeat(31).concat("1"),
      spanId: record.spanId,
      traceFlags: TraceFlags.SAMPLED,
    };
    const span: Span = {
      spanContext: () => spanContext,
      setAttribute: (key, value) => {
        if (value !== undefined) record.attributes[key] = value;
        return span;
      },
      setAttributes: (attributes) => {
        for (const [key, value] of Object.entries(attributes))
          if (value !== undefined) record.attributes[key] = value;
        return span;
      },
      addEvent: () => span,
      addLink: () => span,
      addLinks: () => span,
      setStatus: () => span,
      updateName: () => span,
      end: () => {
        record.ends += 1;
        record.endedOrder ??= ++this.#ended;
      },
      isRecording: () => record.ends === 0,
      recordException: () => {},
    };
    return span;
  }
}
