import { afterEach, describe, expect, it, vi } from "vitest";
import { ToolResultAnswers } from "./tool-result-answers.js";

afterEach(() => {
  vi.useRealTimers();
});

describe("ToolResultAnswers", () => {
  it("forgets an answer once its token expired, though no other post comes", async () => {
    vi.useFakeTimers({ now: 1_000 });
    const answers = new ToolResultAnswers(Date.now);
    await answers.once("n1", "p", 5_000, async () => "r2");
    await answers.once("n2", "p", 9_000, async () => undefined);
    expect(answers.size).toBe(2);
    vi.advanceTimersByTime(4_000);
    expect(answers.size).toBe(1);
    vi.advanceTimersByTime(4_000);
    expect(answers.size).toBe(0);
  });

  it("forgets every answer on close(), and leaves no timer behind", async () => {
    vi.useFakeTimers({ now: 1_000 });
    const answers = new ToolResultAnswers(Date.now);
    await answers.once("n1", "p", 5_000, async () => "r2");
    answers.close();
    expect([answers.size, vi.getTimerCount()]).toEqual([0, 0]);
  });
});
