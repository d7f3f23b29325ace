import { type AgentMessage, agentMessageSchema } from "../messages.js";

const LLM_ROLES = new Set(["user", "assistant", "toolResult"]);

/**
 * Messages a hook or an orchestrator hands on (what `transformContext` or `convertToLlm` gave,
 * `prepareStep`'s and `ctx.decide()`'s `messages`), checked before the prompt is built from them:
 * no array, or an element that is no message (`llmOnly`: no user, assistant or tool result
 * message), throws a `TypeError` saying `what` was wrong ("transformContext returned an invalid
 * result") and naming the element (in `field`, when given), rather than a `TypeError` from inside
 * the prompt builder or a message silently dropped. Elements taken unchanged, in order, from
 * `input` were checked before (as they entered the history, or by the stage before): only the
 * others are parsed, so a stage that keeps or drops messages costs a scan, not a parse.
 */
export function checkedMessages<T extends AgentMessage>(
  output: unknown,
  input: readonly AgentMessage[],
  what: string,
  llmOnly: boolean,
  field?: string,
): readonly T[] {
  const problem = messagesProblem(output, input, llmOnly, field);
  if (problem !== undefined) throw new TypeError(`${what}: ${problem}.`);
  return output as T[];
}

/** What `checkedMessages` would refuse, said as it would say it; undefined when nothing. */
export function messagesProblem(
  output: unknown,
  input: readonly AgentMessage[],
  llmOnly: boolean,
  field?: string,
): string | undefined {
  if (!Array.isArray(output)) {
    const got = refusedPromise(output)
      ? "a promise (it must return the messages, not a promise of them)"
      : output === null
        ? "null"
        : typeof output;
    return `${field ? `${field} must be` : "expected"} an array of messages, got ${got}`;
  }
  let next = 0;
  for (let index = 0; index < output.length; index++) {
    const message: unknown = output[index];
    const at = input.indexOf(message as AgentMessage, next);
    if (at >= 0) next = at + 1;
    else {
      const parsed = agentMessageSchema.safeParse(message);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        const path = issue && issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
        return `${elementAt(index, field)} is no message: ${path}${issue?.message ?? "invalid"}`;
      }
    }
    const { role } = message as AgentMessage;
    if (llmOnly && !LLM_ROLES.has(role))
      return `${elementAt(index, field)} has role "${role}": the model takes user, assistant and toolResult messages`;
  }
  return undefined;
}

function elementAt(index: number, field: string | undefined): string {
  return field ? `${field}[${index}]` : `element ${index}`;
}

/**
 * Whether a hook gave a promise where messages were due. Refused, it is never awaited: its
 * rejection (an async hook that throws) is caught here, as unhandled it would end the process.
 */
export function refusedPromise(value: unknown): boolean {
  if (!hasThenMethod(value)) return false;
  // `Promise.resolve` calls a thenable's `then` later, and turns a `then` that throws into a rejection.
  Promise.resolve(value).catch(ignore);
  return true;
}

/**
 * Whether `value` has a `then` method, as every promise has. A `then` that throws when read (a
 * getter, a proxy refusing properties it does not know) makes no promise: asking must not throw
 * the value's own error at whoever checks it, so it reads as "no".
 */
export function hasThenMethod(value: unknown): value is PromiseLike<unknown> {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return false;
  try {
    return typeof (value as { then?: unknown } | null)?.then === "function";
  } catch {
    return false;
  }
}

function ignore(): void {}
