import type { AssistantMessage } from "../messages.js";
import type { RunContext } from "./contract.js";

/**
 * The turn loop every orchestrator shares: open a turn, let `turn` produce its answer, close the
 * turn with it; then, when follow-up messages wait (`agent.followUp()` or the config callback),
 * add them to the history and open the next turn. Returns when none waits.
 */
export async function runTurns(
  ctx: RunContext,
  turn: (turnNumber: number) => Promise<AssistantMessage>,
): Promise<void> {
  for (;;) {
    const turnNumber = ctx.startTurn();
    ctx.endTurn(await turn(turnNumber));
    const followUps = await ctx.followUps.take();
    if (followUps.length === 0) return;
    ctx.messages.append(...followUps);
  }
}
