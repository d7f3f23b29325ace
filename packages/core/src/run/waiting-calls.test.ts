import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ClientToolError, InvalidConfigError } from "../errors.js";
import type { ToolCall } from "../messages.js";
import { defineTool } from "../tools/define-tool.js";
import type { Suspension } from "./suspension.js";
import { WaitingCalls } from "./waiting-calls.js";

const call = (id: string): ToolCall => ({ id, name: "pay", args: { id } });
const resumeOptions = { tag: "the suspended prompt's options" };

/** A batch of `a`, `b` (approvals), `c`, `d` (client calls) and `free`, which waits for nothing. */
function suspended(decided?: Suspension["decided"]): WaitingCalls<typeof resumeOptions> {
  const waiting = new WaitingCalls<typeof resumeOptions>();
  const suspension: Suspension = {
    calls: [call("a"), call("b"), call("c"), call("d"), call("free")],
    waits: new Map([
      ["a", { kind: "approval", reason: "spends money" }],
      ["b", { kind: "approval" }],
      ["c", { kind: "client" }],
      ["d", { kind: "client" }],
    ]),
    ...(decided ? { decided } : {}),
  };
  waiting.settle(suspension, resumeOptions);
  return waiting;
}

/** The agent's callers see the error's class and its exact message: both are checked. */
function expectError(act: () => unknown, type: typeof InvalidConfigError, message: string): void {
  let error: unknown;
  try {
    act();
  } catch (caught) {
    error = caught;
  }
  expect(error).toBeInstanceOf(type);
  expect((error as Error).message).toBe(message);
}

const ids = (calls: readonly { toolCallId: string }[]) => calls.map((waiting) => waiting.toolCallId);

describe("WaitingCalls: approvals", () => {
  it("returns the resume options only when the last approval is decided", () => {
    const waiting = suspended();
    expect(waiting.approvals).toStrictEqual([
      { toolCallId: "a", toolName: "pay", args: { id: "a" }, reason: "spends money" },
      { toolCallId: "b", toolName: "pay", args: { id: "b" } },
    ]);
    expect(waiting.decide("b", { approved: false, reason: "no" })).toBeUndefined();
    expect(ids(waiting.approvals)).toEqual(["a"]);
    // The client calls still wait for results, but they do not hold back the approvals' resume.
    expect(waiting.decide("a", { approved: true })).toBe(resumeOptions);
    expect(waiting.approvals).toEqual([]);
  });

  it("refuses a second decision on a call, approved or denied, and keeps the first", () => {
    const waiting = suspended();
    waiting.decide("a", { approved: true });
    waiting.decide("b", { approved: false });
    const again = 'Tool call "a" was already approved.';
    expectError(() => waiting.decide("a", { approved: false }), InvalidConfigError, again);
    expectError(() => waiting.decide("a", { approved: true }), InvalidConfigError, again);
    const denied = 'Tool call "b" was already denied.';
    expectError(() => waiting.decide("b", { approved: true }), InvalidConfigError, denied);
    expect([...(waiting.takeBatch()?.decisions ?? [])]).toEqual([
      ["a", { approved: true }],
      ["b", { approved: false }],
    ]);
  });

  it("refuses a denial whose reason is not text, and leaves the call undecided", () => {
    const waiting = suspended();
    expectError(
      () => waiting.decide("a", { approved: false, reason: 42 as never }),
      InvalidConfigError,
      "A denial's reason must be a string, got number.",
    );
    expect(ids(waiting.approvals)).toEqual(["a", "b"]);
  });

  it("refuses a decision on a call that does not wait for approval", () => {
    const waiting = suspended();
    for (const id of ["c", "free", "unknown"])
      expectError(
        () => waiting.decide(id, { approved: true }),
        InvalidConfigError,
        `No tool call "${id}" is waiting for approval.`,
      );
    const none = new WaitingCalls();
    const message = 'No tool call "a" is waiting for approval.';
    expectError(() => none.decide("a", { approved: true }), InvalidConfigError, message);
  });

  it("counts the approvals decided before the batch suspended as decided", () => {
    const waiting = suspended(new Map([["a", { approved: true }]]));
    expect(ids(waiting.approvals)).toEqual(["b"]);
    const again = 'Tool call "a" was already approved.';
    expectError(() => waiting.decide("a", { approved: false }), InvalidConfigError, again);
    expect(waiting.decide("b", { approved: true })).toBe(resumeOptions);
  });
});

describe("WaitingCalls: client results", () => {
  it("takes each result of the batch once, and returns the resume options with the last", () => {
    const waiting = suspended();
    expect(ids(waiting.clientCalls)).toEqual(["c", "d"]);
    expect(waiting.submit("d", { result: 4 })).toBeUndefined();
    const again = 'Client tool call "d" already has its result.';
    expectError(() => waiting.submit("d", { result: 5 }), ClientToolError, again);
    expect(ids(waiting.clientCalls)).toEqual(["c"]);
    expect(waiting.submit("c", { error: "closed" })).toBe(resumeOptions);
    expect(waiting.clientCalls).toEqual([]);
    expect([...(waiting.takeBatch()?.results ?? [])]).toEqual([
      ["d", { result: 4 }],
      ["c", { error: "closed" }],
    ]);
  });

  it("delivers a result the batch does not wait for to the run in progress, once", async () => {
    const waiting = suspended();
    const result = callClientTool(waiting, "live");
    // While a batch is suspended, the calls listed are the batch's.
    expect(ids(waiting.clientCalls)).toEqual(["c", "d"]);
    expect(waiting.submit("live", { result: "Hello" })).toBeUndefined();
    await expect(result).resolves.toBe("Hello");
    const gone = 'No client tool call "live" is waiting for a result.';
    expectError(() => waiting.submit("live", { result: "again" }), ClientToolError, gone);
    expectError(() => waiting.submit("free", { result: 1 }), ClientToolError, gone.replace("live", "free"));
  });

  it("refuses a malformed outcome before taking anything: the call still waits for a good one", async () => {
    const waiting = suspended();
    const live = callClientTool(waiting, "live");
    const bad: [unknown, string][] = [
      [null, "got null"],
      ["Ada", "got string"],
      [{}, "give either result or error"],
      [{ result: 1, error: "x" }, "give either result or error"],
      [{ error: 42 }, "error must be a string, got number"],
    ];
    for (const id of ["live", "c"])
      for (const [outcome, problem] of bad)
        expectError(
          () => waiting.submit(id, outcome as never),
          ClientToolError,
          `The outcome for client tool call "${id}" must be { result } or { error: string }: ${problem}.`,
        );
    expect(ids(waiting.clientCalls)).toEqual(["c", "d"]);
    expect(waiting.submit("live", { result: "Ada" })).toBeUndefined();
    await expect(live).resolves.toBe("Ada");
    expect(waiting.submit("c", { result: undefined })).toBeUndefined();
    expect(ids(waiting.clientCalls)).toEqual(["d"]);
  });

  it("lists the calls the run in progress waits for when no batch is suspended", () => {
    const waiting = suspended();
    void callClientTool(waiting, "live");
    waiting.dropBatch();
    expect(waiting.clientCalls).toEqual([{ toolCallId: "live", toolName: "read_page", args: {} }]);
    expect(waiting.approvals).toEqual([]);
  });
});

describe("WaitingCalls: the batch", () => {
  it("hands the batch to one run only, with the decisions made so far", () => {
    const waiting = suspended();
    waiting.decide("a", { approved: true });
    const batch = waiting.takeBatch();
    expect(batch?.suspension.calls).toHaveLength(5);
    expect([...(batch?.decisions ?? [])]).toEqual([["a", { approved: true }]]);
    expect(waiting.takeBatch()).toBeUndefined();
    const message = 'No tool call "b" is waiting for approval.';
    expectError(() => waiting.decide("b", { approved: true }), InvalidConfigError, message);
  });

  it("keeps no batch after a run that did not suspend", () => {
    const waiting = suspended();
    waiting.settle(undefined, resumeOptions);
    expect(waiting.approvals).toEqual([]);
    expect(waiting.takeBatch()).toBeUndefined();
  });
});

/** A client call of the run in progress (`read_page`, as a run's batch would start it): settles with its result. */
function callClientTool(waiting: WaitingCalls<unknown>, toolCallId: string): Promise<unknown> {
  const page = defineTool({
    name: "read_page",
    description: "r",
    inputSchema: z.object({}),
    execution: "client",
  });
  const signal = new AbortController().signal;
  return Promise.resolve(
    waiting.clientTools.bind(page).execute({}, { signal, toolCallId, idempotencyKey: "k" }),
  );
}
