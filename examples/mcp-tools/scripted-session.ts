import { join } from "node:path";
import { script, scriptedModel } from "@agent-core/testing";

/**
 * The offline demo model cannot read files, so offline the example plays a scripted session: the
 * calls a model makes to answer from the notes in `folder`, one reply per model call.
 */
export function scriptedSession(folder: string) {
  const model = scriptedModel([
    [script.toolCall("fs_list_directory", { path: folder })],
    [script.toolCall("fs_read_text_file", { path: join(folder, "todo.md") })],
    [script.text("[demo] Your to-do list: buy milk, and call Ada about the trip.")],
  ]);
  return { model, label: "scripted session (set OPENAI_API_KEY to use a real model)" };
}
