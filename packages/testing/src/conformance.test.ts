import type { Orchestrator, RunContext } from "@agent-core/core";
import { describe, expect, it } from "vitest";
import { conformanceChecks } from "./conformance.js";

// The suite must fail orchestrators that break a guarantee the core cannot keep for them.

function check(name: string) {
  const found = conformanceChecks.find((c) => c.name.startsWith(name));
  if (!found) throw new Error(`no check named ${name}`);
  return found;
}
const orchestrator =
  (run: (ctx: RunContext) => Promise<void>): (() => Orchestrator) =>
  () => ({ name: "broken", run });

describe("conformance checks catch broken orchestrators", () => {
  it("one that turns a provider failure into an answer", async () => {
    const swallowing = orchestrator(async (ctx) => {
      ctx.startTurn();
      try {
        await ctx.decide();
      } catch {
        const message = {
          role: "assistant" as const,
          content: [{ type: "text" as const, text: "I encountered an error" }],
        };
        ctx.messages.append(message);
        ctx.endTurn(message);
      }
    });
    await expect(check("reports a provider failure").run(swallowing)).rejects.toThrow(
      /expected 'completed' to be 'error'/,
    );
  });

  it("one that never looks at the steering queue", async () => {
    const deaf = orchestrator(async (ctx) => {
      ctx.startTurn();
      const message = { role: "assistant" as const, content: [{ type: "text" as const, text: "done" }] };
      ctx.messages.append(message);
      ctx.endTurn(message);
    });
    await expect(check("honours steering").run(deaf)).rejects.toThrow();
  });

  it("one that loops forever is still bounded: maxCycles is kept for it by the core", async () => {
    const looping = orchestrator(async (ctx) => {
      for (;;) {
        const decision = await ctx.decide();
        if (decision.mode === "steer") await ctx.executeTools(decision.toolCalls);
      }
    });
    await expect(check("keeps maxCycles").run(looping)).resolves.toBeUndefined();
  });
});
