import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ClientToolError } from "../errors.js";
import { defineTool } from "../tools/define-tool.js";
import { ClientToolCalls } from "./client-tools.js";

const page = defineTool({
  name: "read_page",
  description: "r",
  inputSchema: z.object({ selector: z.string() }),
  execution: "client",
});

function waitFor(calls: ClientToolCalls, toolCallId: string, signal = new AbortController().signal) {
  const tool = calls.bind(page);
  return tool.execute(
    { selector: "h1" },
    { signal, toolCallId, idempotencyKey: `r:${toolCallId}` },
  ) as Promise<unknown>;
}

describe("ClientToolCalls", () => {
  it("waits for the delivered result, lists the call meanwhile, and stops listening to its signal", async () => {
    const calls = new ClientToolCalls();
    const signal = new AbortController().signal;
    const waiting = waitFor(calls, "c1", signal);
    expect(calls.waiting).toEqual([{ toolCallId: "c1", toolName: "read_page", args: { selector: "h1" } }]);
    expect(getEventListeners(signal, "abort")).toHaveLength(1);
    calls.deliver("c1", { result: "Hello" });
    expect(await waiting).toBe("Hello");
    expect(calls.waiting).toEqual([]);
    expect(getEventListeners(signal, "abort")).toHaveLength(0);
  });

  it("rejects with the delivered error's text, and stops listening too", async () => {
    const calls = new ClientToolCalls();
    const signal = new AbortController().signal;
    const waiting = waitFor(calls, "c1", signal);
    calls.deliver("c1", { error: "no such element" });
    await expect(waiting).rejects.toThrow("no such element");
    expect(getEventListeners(signal, "abort")).toHaveLength(0);
  });

  it("ends the wait with the signal's reason when it aborts; the call then takes no result", async () => {
    const calls = new ClientToolCalls();
    const abort = new AbortController();
    const waiting = waitFor(calls, "c1", abort.signal);
    abort.abort(new Error("deadline"));
    await expect(waiting).rejects.toThrow("deadline");
    expect(calls.waiting).toEqual([]);
    expect(() => calls.deliver("c1", { result: "late" })).toThrow(ClientToolError);
  });

  it("does not wait at all on a signal already aborted", async () => {
    const calls = new ClientToolCalls();
    const waiting = waitFor(calls, "c1", AbortSignal.abort(new Error("gone")));
    expect(calls.waiting).toEqual([]);
    await expect(waiting).rejects.toThrow("gone");
  });

  it("binds a result delivered while the batch was suspended: execute answers with it at once", () => {
    const calls = new ClientToolCalls();
    const options = { signal: new AbortController().signal, toolCallId: "c1", idempotencyKey: "r:c1" };
    expect(calls.bind(page, { result: "Hi" }).execute({ selector: "h1" }, options)).toBe("Hi");
    expect(() => calls.bind(page, { error: "broke" }).execute({ selector: "h1" }, options)).toThrow("broke");
    expect(calls.waiting).toEqual([]);
  });
});
