import type { AgentEvent, AgentEventOf, eventSchemas } from "@agent-core/core";

/** Where output goes: `process.stdout`, or a string collector in tests. */
export interface TextSink {
  write(text: string): unknown;
}

export interface HumanRendererOptions {
  /** ANSI colours; only for a terminal, and never when NO_COLOR is set. */
  color: boolean;
  /** The model label for the header line. */
  model: string;
  /** Marks the header "[demo]" so the demo model's answers are never taken for a real model's. */
  demo: boolean;
  orchestrator: string;
}

/** Renders one event; feed it every event of a run, in order. */
export type EventRenderer = (event: AgentEvent) => void;

/** One NDJSON line per event, nothing else, so the output can be piped into `jq` or another program. */
export function createJsonRenderer(out: TextSink): EventRenderer {
  return (event) => out.write(`${JSON.stringify(event)}\n`);
}

// Tool results can be whole documents; a human skimming the run needs only their start.
const MAX_VALUE_CHARS = 300;

export type Style = "dim" | "red" | "green" | "cyan" | "magenta" | "bold";

const ANSI: Record<Style, [open: string, close: string]> = {
  dim: ["\x1b[2m", "\x1b[22m"],
  bold: ["\x1b[1m", "\x1b[22m"],
  red: ["\x1b[31m", "\x1b[39m"],
  green: ["\x1b[32m", "\x1b[39m"],
  cyan: ["\x1b[36m", "\x1b[39m"],
  magenta: ["\x1b[35m", "\x1b[39m"],
};

type StreamedEvent = AgentEventOf<"thinking" | "text_delta">;

/** What the cursor is in the middle of: streamed text and thinking continue a line that others must end. */
type LineState = "start" | "text" | "thinking";

/**
 * The live view of a run for a person: the model's text streams in as it arrives, thinking is dimmed,
 * tool calls and results get one line each, and a summary line closes the run.
 */
export function createHumanRenderer(out: TextSink, options: HumanRendererOptions): EventRenderer {
  return new HumanRenderer(out, options).render;
}

class HumanRenderer {
  readonly #out: TextSink;
  readonly #options: HumanRendererOptions;
  #line: LineState = "start";
  #cycles = 0;
  #toolCalls = 0;

  constructor(out: TextSink, options: HumanRendererOptions) {
    this.#out = out;
    this.#options = options;
  }

  readonly render = (event: AgentEvent): void => {
    if (event.type === "thinking" || event.type === "text_delta") {
      this.#stream(event);
      return;
    }
    if (event.type === "steering_mode") this.#cycles++;
    if (event.type === "tool_call") this.#toolCalls++;
    const line = this.#lineFor(event);
    if (line !== undefined) this.#writeLine(line);
  };

  /** The one line an event gets, or undefined for bookkeeping a person does not need to see. */
  #lineFor(event: Exclude<AgentEvent, StreamedEvent>): string | undefined {
    switch (event.type) {
      case "agent_start":
        return this.#header();
      case "tool_call":
        return this.#style("cyan", `→ ${printable(event.toolName)}(${formatValue(event.args)})`);
      case "tool_result":
        return this.#toolResult(event);
      case "steering_applied":
        return this.#style("cyan", `↪ steering: ${event.messages.map(describeMessage).join(" | ")}`);
      case "plan_created":
        return this.#planCreated(event);
      case "plan_step_start":
        return `▸ ${stepLabel(event)} ${printable(event.tool)}(${formatValue(event.args)})`;
      case "plan_step_end":
        return this.#planStepEnd(event);
      case "context_truncated":
        return this.#style("dim", contextTruncated(event));
      case "custom":
        return this.#style(
          "magenta",
          `◆ ${printable(event.name)}${event.data === undefined ? "" : ` ${formatValue(event.data)}`}`,
        );
      case "error":
        return this.#style("red", `✗ ${event.code}: ${printable(event.message)}`);
      case "agent_end":
        return this.#summary(event);
      case "steering_mode":
      case "turn_start":
      case "turn_end":
        return undefined;
      default:
        return skipPluginEvent(event);
    }
  }

  #header(): string {
    const { model, demo, orchestrator } = this.#options;
    const label = demo ? `${this.#style("bold", "[demo]")} ${model}` : model;
    return `${this.#style("dim", "▶")} ${label} ${this.#style("dim", `· orchestrator ${orchestrator}`)}`;
  }

  /** Text and thinking arrive in deltas: they continue the current line until another kind of output. */
  #stream(event: StreamedEvent): void {
    const kind = event.type === "thinking" ? "thinking" : "text";
    // A new answer (after a follow-up, say) starts on its own line even when nothing was printed between.
    if (this.#line !== kind || (event.type === "text_delta" && event.index === 0)) {
      this.#endLine();
      if (kind === "thinking") this.#out.write(this.#style("dim", "· thinking: "));
      this.#line = kind;
    }
    const text = printable(event.text);
    this.#out.write(kind === "thinking" ? this.#style("dim", text) : text);
    // Text that ends its own line needs no newline from us before the next line.
    if (kind === "text" && event.text.endsWith("\n")) this.#line = "start";
  }

  #toolResult(event: AgentEventOf<"tool_result">): string {
    const name = printable(event.toolName);
    if (event.status === "ok") return `${this.#style("green", "←")} ${name}: ${formatValue(event.result)}`;
    return this.#style("red", `✗ ${name} ${event.status}: ${printable(event.error ?? "no details")}`);
  }

  #planCreated(event: AgentEventOf<"plan_created">): string {
    const count = plural(event.steps.length, "step");
    const tools = printable(event.steps.map((step) => step.tool).join(", "));
    return this.#style("cyan", event.steps.length > 0 ? `▤ plan: ${count} (${tools})` : `▤ plan: ${count}`);
  }

  #planStepEnd(event: AgentEventOf<"plan_step_end">): string {
    const tool = printable(event.tool);
    if (event.error !== undefined)
      return this.#style("red", `✗ ${stepLabel(event)} ${tool}: ${printable(event.error)}`);
    return `${this.#style("green", "✓")} ${stepLabel(event)} ${tool}: ${formatValue(event.result)}`;
  }

  #summary(event: AgentEventOf<"agent_end">): string {
    const ok = event.stopReason === "completed";
    const parts = [
      this.#style(ok ? "green" : "red", `■ ${event.stopReason}`),
      // Every model call counts (planning calls emit no steering_mode): the run's own metrics say how many.
      plural(event.metrics?.cycles ?? this.#cycles, "cycle"),
      plural(this.#toolCalls, "tool call"),
      `${(event.durationMs / 1000).toFixed(1)}s`,
      plural(event.usage.totalTokens, "token"),
    ];
    return parts.join(this.#style("dim", " · "));
  }

  #writeLine(line: string): void {
    this.#endLine();
    this.#out.write(`${line}\n`);
  }

  #endLine(): void {
    if (this.#line === "start") return;
    this.#out.write("\n");
    this.#line = "start";
  }

  #style(style: Style, text: string): string {
    return styled(this.#options.color, style, text);
  }
}

/**
 * `text` in an ANSI style when `color` is on. Each piece is wrapped on its own, so no colour leaks
 * into what follows if the run dies mid-line.
 */
export function styled(color: boolean, style: Style, text: string): string {
  if (!color) return text;
  const [open, close] = ANSI[style];
  return `${open}${text}${close}`;
}

/**
 * Text from the model, its tools or a server, as text: the control characters a terminal would act
 * on (clear the screen, set the title, write the clipboard, move the cursor over the summary) are
 * shown as their symbols (␛, ␇, …), and a carriage return is dropped.
 */
export function printable(text: string): string {
  let shown = "";
  let from = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (!isControl(code)) continue;
    shown += text.slice(from, index) + symbolOf(code);
    from = index + 1;
  }
  return from === 0 ? text : shown + text.slice(from);
}

/** C0 controls but newline and tab, DEL, and C1 controls (0x9b is CSI too): what a terminal acts on. */
function isControl(code: number): boolean {
  return (code < 0x20 && code !== 0x0a && code !== 0x09) || (code >= 0x7f && code <= 0x9f);
}

function symbolOf(code: number): string {
  if (code === 0x0d) return "";
  if (code < 0x20) return String.fromCharCode(0x2400 + code);
  return code === 0x7f ? "␡" : "�";
}

/** Compact JSON, as the model sent or received it; cut short when long. */
function formatValue(value: unknown): string {
  const text = value === undefined ? "(no output)" : (JSON.stringify(value) ?? String(value));
  return printable(text.length > MAX_VALUE_CHARS ? `${text.slice(0, MAX_VALUE_CHARS)}…` : text);
}

function describeMessage(message: { role: string; content?: unknown }): string {
  const content = typeof message.content === "string" ? message.content : formatValue(message.content);
  return printable(`${message.role}: ${content}`);
}

function stepLabel(event: { index: number; stepCount: number }): string {
  return `step ${event.index + 1}/${event.stepCount}`;
}

function contextTruncated(event: AgentEventOf<"context_truncated">): string {
  const dropped = plural(event.droppedMessages, "message");
  return `… context truncated: dropped ${dropped} (~${plural(event.estimatedTokens, "token")})`;
}

/** "1 message", "2 messages". */
export function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

/** The events that plug-ins add (plan-execute's have their own lines above). */
type PluginEvent = Exclude<AgentEvent, { type: keyof typeof eventSchemas }>;

/**
 * The compiler flags a core event type this renderer does not handle yet; a plug-in's event it has no
 * line for, or one from a newer core at run time, is skipped rather than crashing the run's display.
 */
function skipPluginEvent(_event: PluginEvent): undefined {
  return undefined;
}
