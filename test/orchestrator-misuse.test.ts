import "@agent-core/agentic";
import {
  Agent,
  type AgentRun,
  type Orchestrator,
  type RunContext,
  type RunResult,
  validateTranscript,
} from "@agent-core/core";
import { assertEventProtocol } from "@agent-core/testing";
import { describe, expect, it } from "vitest";

/**
 * Orchestrators that misuse the contract: whatever a plug-in does, the run settles, its events
 * keep the protocol and the history stays valid (the promise of docs/writing-an-orchestrator.md).
 */

function plugin(run: (ctx: RunContext) => Promise<void> | void, name = "misuse"): Orchestrator {
  return { name, run: run as (ctx: RunContext) => Promise<void> };
}

/** The run's result, or a rejection when it does not settle within `ms`. */
function settled(run: AgentRun, ms = 2000): Promise<RunResult> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`result() did not settle within ${ms} ms`)), ms);
  });
  return Promise.race([run.result(), late]).finally(() => clearTimeout(timer));
}

/** Checks what every run must keep, and returns its result. */
async function kept(run: AgentRun): Promise<RunResult> {
  const result = await settled(run);
  assertEventProtocol(run.events);
  expect(validateTranscript(result.messages)).toEqual([]);
  return result;
}

describe("a thrown value that instanceof cannot inspect", () => {
  const hostile = {
    "a Proxy whose prototype trap throws": () =>
      new Proxy(
        {},
        {
          getPrototypeOf() {
            throw new Error("trap");
          },
        },
      ),
    "a revoked Proxy": () => {
      const { proxy, revoke } = Proxy.revocable({}, {});
      revoke();
      return proxy;
    },
  };
  for (const [label, make] of Object.entries(hostile)) {
    it(`${label}, thrown by the orchestrator, ends the run as orchestrator_error`, async () => {
      const agent = new Agent({
        orchestrator: plugin(async () => {
          throw make();
        }),
      });
      const result = await kept(agent.prompt("hi"));
      expect(result.stopReason).toBe("error");
      expect(result.error?.code).toBe("orchestrator_error");
      // The agent takes the next prompt.
      expect((await settled(agent.prompt("again"))).stopReason).toBe("error");
    });

    it(`${label}, given as the abort reason, ends the run as aborted`, async () => {
      const agent = new Agent({ orchestrator: plugin(() => new Promise<void>(() => {})) });
      const run = agent.prompt("hi");
      run.abort(make());
      const result = await kept(run);
      expect(result.stopReason).toBe("aborted");
      expect(result.error?.code).toBe("aborted");
    });
  }
});
