import type { AgentEvent, AgentEventOf, AgentEventType, EventPayload } from "@agent-core/core";
import { describe, expect, it } from "vitest";
import { createHumanRenderer, createJsonRenderer, type HumanRendererOptions } from "./render.js";

const usage = { inputTokens: 100, outputTokens: 23, totalTokens: 123 };

/** Events as the framework sends them: the payload plus a consistent envelope. */
function events(...payloads: { [T in AgentEventType]: { type: T } & EventPayload<T> }[AgentEventType][]) {
  return payloads.map((payload, seq) => ({ ...payload, runId: "r1", seq, ts: 1000 + seq }) as AgentEvent);
}

function start(): { type: "agent_start" } {
  return { type: "agent_start" };
}

function end(stopReason: AgentEventOf<"agent_end">["stopReason"] = "completed", durationMs = 1234) {
  return { type: "agent_end" as const, stopReason, usage, durationMs };
}

function cycle(mode: "respond" | "steer" = "respond") {
  return { type: "steering_mode" as const, mode, queueSize: 0 };
}

function renderHuman(list: AgentEvent[], options: Partial<HumanRendererOptions> = {}): string {
  let output = "";
  const render = createHumanRenderer(
    { write: (text: string) => (output += text) },
    { color: false, model: "gpt-4o-mini via http://x/v1", demo: false, orchestrator: "agentic", ...options },
  );
  for (const event of list) render(event);
  return output;
}

describe("createHumanRenderer", () => {
  it("shows a tool run: header, thinking, tool lines, streamed answer and summary", () => {
    const output = renderHuman(
      events(
        start(),
        { type: "turn_start", turn: 1 },
        { type: "thinking", text: "Needs the " },
        { type: "thinking", text: "calculator." },
        cycle("steer"),
        { type: "tool_call", toolCallId: "c1", toolName: "calculator", args: { expression: "15*3" } },
        {
          type: "tool_result",
          toolCallId: "c1",
          toolName: "calculator",
          status: "ok",
          result: { expression: "15*3", result: 45 },
        },
        { type: "text_delta", text: "15*3 ", index: 0 },
        { type: "text_delta", text: "= 45", index: 1 },
        cycle(),
        end(),
      ),
    );
    expect(output).toBe(
      [
        "▶ gpt-4o-mini via http://x/v1 · orchestrator agentic",
        "· thinking: Needs the calculator.",
        '→ calculator({"expression":"15*3"})',
        '← calculator: {"expression":"15*3","result":45}',
        "15*3 = 45",
        "■ completed · 2 cycles · 1 tool call · 1.2s · 123 tokens",
        "",
      ].join("\n"),
    );
  });

  it("labels the demo model in the header", () => {
    expect(renderHuman(events(start()), { demo: true, model: "offline demo" })).toBe(
      "▶ [demo] offline demo · orchestrator agentic\n",
    );
  });

  it("reports failed and unrun tool calls with their status", () => {
    const result = (status: AgentEventOf<"tool_result">["status"], error: string) => ({
      type: "tool_result" as const,
      toolCallId: "c",
      toolName: "calculator",
      status,
      error,
    });
    const output = renderHuman(
      events(
        result("error", "Division by zero"),
        result("skipped", "Skipped: steering"),
        result("timeout", "took too long"),
        result("denied", "not allowed"),
        result("aborted", "The run was aborted."),
      ),
    );
    expect(output.split("\n")).toEqual([
      "✗ calculator error: Division by zero",
      "✗ calculator skipped: Skipped: steering",
      "✗ calculator timeout: took too long",
      "✗ calculator denied: not allowed",
      "✗ calculator aborted: The run was aborted.",
      "",
    ]);
  });

  it("ends a streaming line before the error and the summary", () => {
    const output = renderHuman(
      events(
        { type: "text_delta", text: "Half an answ", index: 0 },
        { type: "error", code: "aborted", message: "The run was aborted." },
        end("aborted", 50),
      ),
    );
    expect(output).toBe(
      "Half an answ\n✗ aborted: The run was aborted.\n■ aborted · 0 cycles · 0 tool calls · 0.1s · 123 tokens\n",
    );
  });

  it("starts each new answer and thinking on its own line, without blank lines", () => {
    const output = renderHuman(
      events(
        { type: "text_delta", text: "First answer.\n", index: 0 },
        { type: "thinking", text: "Hmm." },
        { type: "text_delta", text: "Second", index: 0 },
        { type: "text_delta", text: " answer.", index: 1 },
        { type: "text_delta", text: "Third answer.", index: 0 },
      ),
    );
    expect(output).toBe("First answer.\n· thinking: Hmm.\nSecond answer.\nThird answer.");
  });

  it("renders steering and plans one line each", () => {
    const output = renderHuman(
      events(
        { type: "steering_applied", messages: [{ role: "user", content: "use UTC" }] },
        {
          type: "plan_created",
          steps: [
            { tool: "calculator", args: { expression: "1+1" } },
            { tool: "get_current_time", args: {} },
          ],
        },
        { type: "plan_step_start", index: 0, stepCount: 2, tool: "calculator", args: { expression: "1+1" } },
        { type: "plan_step_end", index: 0, stepCount: 2, tool: "calculator", args: {}, result: 2 },
        { type: "plan_step_end", index: 1, stepCount: 2, tool: "get_current_time", args: {}, error: "boom" },
        { type: "context_truncated", droppedMessages: 4, estimatedTokens: 1200 },
      ),
    );
    expect(output.split("\n")).toEqual([
      "↪ steering: user: use UTC",
      "▤ plan: 2 steps (calculator, get_current_time)",
      '▸ step 1/2 calculator({"expression":"1+1"})',
      "✓ step 1/2 calculator: 2",
      "✗ step 2/2 get_current_time: boom",
      "… context truncated: dropped 4 messages (~1200 tokens)",
      "",
    ]);
  });

  it("shortens long tool results", () => {
    const output = renderHuman(
      events({
        type: "tool_result",
        toolCallId: "c",
        toolName: "fetch",
        status: "ok",
        result: "x".repeat(1000),
      }),
    );
    expect(output.length).toBeLessThan(400);
    expect(output.trimEnd()).toMatch(/x…$/);
  });

  it("uses ANSI colours only when asked", () => {
    const list = events(
      start(),
      { type: "thinking", text: "hm" },
      { type: "error", code: "x", message: "y" },
      end("error"),
    );
    expect(renderHuman(list, { color: false })).not.toContain("\x1b[");
    const colored = renderHuman(list, { color: true });
    expect(colored).toContain("\x1b[2mhm\x1b[22m");
    expect(colored).toContain("\x1b[31m✗ x: y\x1b[39m");
  });
});

describe("createJsonRenderer", () => {
  it("writes each event as one JSON line", () => {
    let output = "";
    const render = createJsonRenderer({ write: (text: string) => (output += text) });
    const list = events(start(), { type: "text_delta", text: "a\nb", index: 0 }, end());
    for (const event of list) render(event);
    expect(
      output
        .trimEnd()
        .split("\n")
        .map((line) => JSON.parse(line)),
    ).toEqual(list);
  });
});

describe("the live view and terminal control sequences", () => {
  const ESC = "\x1b";
  // What a model, a tool or an MCP server could send to take over the person's terminal: clear the
  // screen, set the window title, write the clipboard (OSC 52), move the cursor up and erase a line.
  const hostile = `${ESC}[2J${ESC}[H${ESC}]0;owned\x07${ESC}]52;c;ZXZpbA==\x07\r${ESC}[1A${ESC}[2K\x9b31m`;

  it("shows what the model, its tools and errors send as text, never as control sequences", () => {
    const output = renderHuman(
      events(
        start(),
        { type: "thinking", text: `think${hostile}` },
        cycle("steer"),
        { type: "tool_call", toolCallId: "c1", toolName: `calc${hostile}`, args: { x: `a\x9bb` } },
        {
          type: "tool_result",
          toolCallId: "c1",
          toolName: "calc",
          status: "error",
          error: `Unexpected character "${hostile}"`,
        },
        { type: "tool_result", toolCallId: "c2", toolName: "calc", status: "ok", result: `r\x9b` },
        {
          type: "steering_applied",
          messages: [{ role: "user", content: `steer${hostile}`, timestamp: 1 }],
        },
        { type: "text_delta", text: `Hello${hostile} world\r\n`, index: 0 },
        { type: "error", code: "provider_error", message: `bad${hostile}` },
        cycle(),
        end("error"),
      ),
    );
    const controls = [...output].filter((char) => {
      const code = char.charCodeAt(0);
      return (code < 0x20 && char !== "\n" && char !== "\t") || (code >= 0x7f && code <= 0x9f);
    });
    expect(controls).toEqual([]);
    expect(output).toContain("Hello␛[2J␛[H␛]0;owned␇");
    expect(output).toContain(" world\n");
  });

  it("color still styles the view's own lines", () => {
    const output = renderHuman(events(start(), { type: "text_delta", text: `x${ESC}[2J`, index: 0 }, end()), {
      color: true,
    });
    expect(output).toContain(`${ESC}[32m■ completed${ESC}[39m`);
    expect(output).not.toContain(`${ESC}[2J`);
  });
});
