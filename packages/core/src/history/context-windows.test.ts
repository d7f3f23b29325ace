import { expect, it } from "vitest";
import { knownContextWindow } from "./context-windows.js";

it("knows common models by the start of their id, the longest match winning", () => {
  expect(knownContextWindow("gpt-4o-mini")).toBe(128_000);
  expect(knownContextWindow("openai/gpt-4.1-mini")).toBe(1_047_576);
  expect(knownContextWindow("gpt-4")).toBe(8_192);
  expect(knownContextWindow("claude-sonnet-4-5")).toBe(200_000);
  expect(knownContextWindow("my-finetune")).toBeUndefined();
});
