import type { UIMessageChunk } from "ai";
import { expectTypeOf, it } from "vitest";
import type { UiChunk } from "./ui-chunks.js";

it("sends only chunks of the AI SDK's own UI message stream protocol", () => {
  expectTypeOf<UiChunk>().toExtend<UIMessageChunk>();
});
