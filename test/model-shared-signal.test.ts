import "@agent-core/agentic";
import { Agent } from "@agent-core/core";
import { script, scriptedModel } from "@agent-core/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

// One AbortSignal passed to many prompts at once (an app's shutdown signal, a request's signal):
// each prompt's run links to it, and Node warns about a leak past 10 listeners on one signal.

const PROMPTS = 20;

describe("a signal shared by many concurrent prompts", () => {
  const warnings: Error[] = [];
  const onWarning = (warning: Error) => warnings.push(warning);
  beforeEach(() => {
    warnings.length = 0;
    process.on("warning", onWarning);
  });
  afterEach(() => {
    process.off("warning", onWarning);
  });

  it("prints no MaxListenersExceededWarning, and every run completes", async () => {
    const model = scriptedModel(Array.from({ length: PROMPTS }, (_, i) => [script.text(`answer ${i}`)]));
    const agent = new Agent({ provider: model });
    const { signal } = new AbortController();
    const runs = Array.from({ length: PROMPTS }, (_, i) => agent.prompt(`question ${i}`, { signal }));
    const results = await Promise.all(runs.map((run) => run.result()));
    expect(results.map((result) => result.stopReason)).toEqual(Array(PROMPTS).fill("completed"));
    expect(results.map((result) => result.text)).toEqual(runs.map((_, i) => `answer ${i}`));
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings).toEqual([]);
  });

  it("aborts every run, the running one and those waiting behind it", async () => {
    const model = scriptedModel([[script.text("partial"), script.hang()]]);
    const agent = new Agent({ provider: model });
    const controller = new AbortController();
    const runs = Array.from({ length: PROMPTS }, (_, i) =>
      agent.prompt(`question ${i}`, { signal: controller.signal }),
    );
    await new Promise<void>((resolve) => {
      const off = agent.on("text_delta", () => {
        off();
        resolve();
      });
    });
    controller.abort();
    const results = await Promise.all(runs.map((run) => run.result()));
    expect(results.map((result) => result.stopReason)).toEqual(Array(PROMPTS).fill("aborted"));
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings).toEqual([]);
  });
});
