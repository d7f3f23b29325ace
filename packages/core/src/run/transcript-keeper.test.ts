import { describe, expect, it } from "vitest";
import { AbortedError, InvalidHistoryError } from "../errors.js";
import type { AgentMessage, AssistantMessage, ToolResultMessage } from "../messages.js";
import { validateTranscript } from "./transcript.js";
import { TranscriptKeeper } from "./transcript-keeper.js";

const user = (content: string): AgentMessage => ({ role: "user", content });
const calls = (...ids: string[]): AssistantMessage => ({
  role: "assistant",
  content: ids.map((id) => ({ type: "toolCall" as const, id, name: "t", args: { id } })),
});
const answer = (text: string): AssistantMessage => ({ role: "assistant", content: [{ type: "text", text }] });
const result = (id: string, content = `done ${id}`): ToolResultMessage => ({
  role: "toolResult",
  toolCallId: id,
  toolName: "t",
  content,
  isError: false,
  status: "ok",
});

/** Each message as `role` or `role id status content`, for compact history assertions. */
function shape(messages: readonly AgentMessage[]): string[] {
  return messages.map((m) => {
    if (m.role !== "toolResult") return m.role;
    const r = m as ToolResultMessage;
    return `toolResult ${r.toolCallId} ${r.status} ${r.content}`;
  });
}

describe("TranscriptKeeper", () => {
  it("appends user, assistant and app messages as they are", () => {
    const history: AgentMessage[] = [];
    const keeper = new TranscriptKeeper(history);
    const note = { role: "note", text: "deployed" };
    expect(keeper.append(user("hi"))).toEqual([]);
    expect(keeper.append(answer("hello"))).toEqual([]);
    expect(keeper.append(note)).toEqual([]);
    expect(keeper.messages).toBe(history);
    expect(history).toEqual([user("hi"), answer("hello"), note]);
    expect(keeper.openCalls).toEqual([]);
  });

  it("records results only for open calls: unknown and duplicate ones are refused", () => {
    const keeper = new TranscriptKeeper();
    keeper.append(user("go"));
    keeper.append(calls("a", "b"));
    expect(keeper.record(result("x"))).toBe("unknown");
    expect(keeper.record(result("a"))).toBe("recorded");
    expect(keeper.record(result("a"))).toBe("duplicate");
    expect(keeper.record(result("b"))).toBe("recorded");
    expect(keeper.record(result("b"))).toBe("duplicate");
    expect(shape(keeper.messages)).toEqual([
      "user",
      "assistant",
      "toolResult a ok done a",
      "toolResult b ok done b",
    ]);
  });

  it("counts a result that already waits for the calls before it as a duplicate", () => {
    const keeper = new TranscriptKeeper();
    keeper.append(calls("a", "b"));
    expect(keeper.record(result("b"))).toBe("recorded");
    expect(keeper.record(result("b", "again"))).toBe("duplicate");
    expect(keeper.awaits("b")).toBe(false);
    expect(keeper.awaits("a")).toBe(true);
  });

  it("refuses to append a result for no open call, or a second one, with InvalidHistoryError", () => {
    const keeper = new TranscriptKeeper();
    keeper.append(calls("a"));
    expect(() => keeper.append(result("x"))).toThrow(
      new InvalidHistoryError('tool result "x" answers no open tool call.'),
    );
    expect(keeper.append(result("a"))).toEqual([]);
    expect(() => keeper.append(result("a"))).toThrow(
      new InvalidHistoryError('tool result "a" answers a call that already has its result.'),
    );
    expect(shape(keeper.messages)).toEqual(["assistant", "toolResult a ok done a"]);
  });

  it("awaits a call that is open and not yet answered, also before any result came early", () => {
    const keeper = new TranscriptKeeper();
    keeper.append(calls("a", "b"));
    expect(keeper.awaits("a")).toBe(true);
    expect(keeper.awaits("b")).toBe(true);
    expect(keeper.awaits("x")).toBe(false);
    keeper.record(result("a"));
    expect(keeper.awaits("a")).toBe(false);
    expect(keeper.awaits("b")).toBe(true);
  });

  it("keeps the calls open when an app message comes between them and their results", () => {
    const keeper = new TranscriptKeeper();
    keeper.append(calls("a"));
    const note = { role: "note", text: "deployed" };
    expect(keeper.append(note)).toEqual([]);
    expect(keeper.openCalls.map((c) => c.id)).toEqual(["a"]);
    expect(keeper.record(result("a"))).toBe("recorded");
    expect(shape(keeper.messages)).toEqual(["assistant", "note", "toolResult a ok done a"]);
  });

  it("refuses an id repeated anywhere in the reply, not only right after itself", () => {
    const keeper = new TranscriptKeeper();
    expect(() => keeper.append(calls("a", "b", "a"))).toThrow(
      new InvalidHistoryError(
        'tool call id "a" is already used in the history; every call needs its own id.',
      ),
    );
    expect(keeper.messages).toEqual([]);
  });

  it("holds results that finish early and lets them in in call order", () => {
    const keeper = new TranscriptKeeper();
    keeper.append(calls("a", "b", "c"));
    expect(keeper.record(result("c"))).toBe("recorded");
    expect(keeper.record(result("b"))).toBe("recorded");
    expect(shape(keeper.messages)).toEqual(["assistant"]);
    expect(keeper.openCalls.map((c) => c.id)).toEqual(["a", "b", "c"]);
    expect(keeper.record(result("a"))).toBe("recorded");
    expect(shape(keeper.messages)).toEqual([
      "assistant",
      "toolResult a ok done a",
      "toolResult b ok done b",
      "toolResult c ok done c",
    ]);
    expect(keeper.openCalls).toEqual([]);
  });

  it("closes the open calls when a user or assistant message comes first, and returns what it made", () => {
    for (const next of [user("next"), answer("next")]) {
      const keeper = new TranscriptKeeper();
      keeper.append(user("go"));
      keeper.append(calls("a", "b"));
      keeper.record(result("a"));
      const closed = keeper.append(next);
      expect(closed.map(({ call, result }) => [call.id, result.toolCallId, result.status])).toEqual([
        ["b", "b", "error"],
      ]);
      expect(shape(keeper.messages)).toEqual([
        "user",
        "assistant",
        "toolResult a ok done a",
        "toolResult b error not completed: the run went on without its result",
        next.role,
      ]);
      expect(validateTranscript(keeper.messages)).toEqual([]);
    }
  });

  it("close() answers the open calls, keeping the results that finished early", () => {
    const keeper = new TranscriptKeeper();
    keeper.append(calls("a", "b", "c"));
    keeper.record(result("b"));
    const closed = keeper.close("aborted", "stopped");
    expect(
      closed.map(({ call, result }) => [call.id, result.status, result.content, result.isError]),
    ).toEqual([
      ["a", "aborted", "stopped", true],
      ["c", "aborted", "stopped", true],
    ]);
    expect(shape(keeper.messages)).toEqual([
      "assistant",
      "toolResult a aborted stopped",
      "toolResult b ok done b",
      "toolResult c aborted stopped",
    ]);
    expect(validateTranscript(keeper.messages)).toEqual([]);
    expect(keeper.openCalls).toEqual([]);
    expect(keeper.close("aborted", "again")).toEqual([]);
  });

  it("refuses an assistant message reusing a tool-call id, within it or from the history", () => {
    const keeper = new TranscriptKeeper();
    expect(() => keeper.append(calls("a", "a"))).toThrow(InvalidHistoryError);
    const fresh = new TranscriptKeeper();
    fresh.append(calls("a"));
    fresh.append(result("a"));
    expect(() => fresh.append(calls("a"))).toThrow(
      new InvalidHistoryError(
        'tool call id "a" is already used in the history; every call needs its own id.',
      ),
    );
  });

  it("gives a call whose id is taken, in the history or earlier in its reply, a fresh one", () => {
    const keeper = new TranscriptKeeper();
    const fresh = [{ id: "a", name: "t", args: 1 }];
    expect(keeper.withUniqueIds(fresh)).toBe(fresh);
    keeper.append(calls("a", "a_2"));
    const reply = [
      { id: "a", name: "t", args: 1 },
      { id: "b", name: "t", args: 2 },
      { id: "b", name: "t", args: 3 },
    ];
    expect(keeper.withUniqueIds(reply)).toEqual([
      { id: "a_3", name: "t", args: 1, originalId: "a" },
      { id: "b", name: "t", args: 2 },
      { id: "b_2", name: "t", args: 3, originalId: "b" },
    ]);
    expect(reply[0]).toEqual({ id: "a", name: "t", args: 1 });
  });

  it("clear() empties the history, the open calls and the ids", () => {
    const history: AgentMessage[] = [];
    const keeper = new TranscriptKeeper(history);
    keeper.append(calls("a", "b"));
    keeper.record(result("b"));
    keeper.clear();
    expect(history).toEqual([]);
    expect(keeper.openCalls).toEqual([]);
    const again = [{ id: "a", name: "t", args: {} }];
    expect(keeper.withUniqueIds(again)).toBe(again);
    expect(keeper.record(result("b"))).toBe("unknown");
    keeper.append(calls("a"));
    expect(keeper.record(result("a"))).toBe("recorded");
    expect(shape(history)).toEqual(["assistant", "toolResult a ok done a"]);
  });
});

describe("TranscriptKeeper refusing a message", () => {
  it("leaves the keeper as it was when an append is refused for a reused call id", () => {
    const keeper = new TranscriptKeeper();
    keeper.append(calls("open"));
    expect(() => keeper.append(calls("x", "x"))).toThrow(InvalidHistoryError);
    expect(keeper.messages).toEqual([calls("open")]);
    expect(keeper.openCalls.map((c) => c.id)).toEqual(["open"]);
    expect(keeper.withUniqueIds([{ id: "x", name: "t", args: {} }])[0]?.id).toBe("x");
  });
});

describe("TranscriptWriter", () => {
  it("writes through its keeper", () => {
    const keeper = new TranscriptKeeper();
    const writer = keeper.writer();
    expect(writer.keeper).toBe(keeper);
    writer.append(calls("a"));
    expect(writer.record(result("a"))).toBe(true);
    expect(writer.record(result("a"))).toBe(false);
    expect(writer.record(result("x"))).toBe(false);
    expect(shape(keeper.messages)).toEqual(["assistant", "toolResult a ok done a"]);
  });

  it("once closed, refuses appends and records, but can still close the open calls", () => {
    const keeper = new TranscriptKeeper();
    const writer = keeper.writer();
    writer.append(calls("a", "b"));
    writer.close();
    expect(writer.closed).toBe(true);
    expect(() => writer.append(user("late"))).toThrow(AbortedError);
    expect(writer.record(result("a"))).toBe(false);
    expect(shape(keeper.messages)).toEqual(["assistant"]);
    expect(writer.closeCalls("aborted", "run ended").map(({ call }) => call.id)).toEqual(["a", "b"]);
    expect(validateTranscript(keeper.messages)).toEqual([]);
  });

  it("a closed writer does not stop the next run's writer", () => {
    const keeper = new TranscriptKeeper();
    keeper.writer().close();
    const next = keeper.writer();
    next.append(user("again"));
    expect(shape(keeper.messages)).toEqual(["user"]);
  });
});
