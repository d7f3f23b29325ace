import { type ScriptStep, script, scriptedModel } from "@agent-core/testing";

const critique = (verdict: "accept" | "revise", issues: string[] = []): ScriptStep => [
  script.text(JSON.stringify({ verdict, issues })),
];

/**
 * The offline demo model answers but cannot critique, so offline the demo plays a recorded-style
 * session instead: one model reply per call, in the order the reflect orchestrator makes them.
 */
export function scriptedSession() {
  const model = scriptedModel([
    [script.toolCall("calculator", { expression: "15*3" })], // draft: use the tool
    [script.text("15 × 3 ", "= 35.")], // draft answer, with a slip
    critique("revise", ["The calculator returned 45, but the answer says 35."]),
    [script.text("15 × 3 ", "= 45.")], // revision
    critique("accept"),
  ]);
  return { model, label: "scripted session (set OPENAI_API_KEY to use a real model)" };
}
