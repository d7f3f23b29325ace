import { type AgentMessage, agentMessageSchema } from "../messages.js";

const LLM_ROLES = new Set(["user", "assistant", "toolResult"]);

/**
 * What a stage of the request pipeline gave (`transformContext`, `convertToLlm`, the `messages` of
 * `prepareStep`), checked before the next stage reads it: no array, or an element that is no
 * message (`llmOnly`: no user, assistant or tool result message), fails the model call with a
 * `TypeError` naming the stage and the element (in `field` of the stage's result, when given), rather than a `TypeError` from inside the prompt
 * builder or a message silently dropped. Elements the stage took unchanged, in order, from its
 * `input` were checked before (as they entered the history, or by the stage before); only the
 * others are parsed, so a stage that keeps or drops messages costs a scan, not a parse.
 */
export function checkedMessages<T extends AgentMessage>(
  output: unknown,
  input: readonly AgentMessage[],
  stage: string,
  llmOnly: boolean,
  field?: string,
): readonly T[] {
  if (!Array.isArray(output)) {
    const got = isThenable(output)
      ? "a promise (it must return the messages, not a promise of them)"
      : output === null
        ? "null"
        : typeof output;
    throw invalid(stage, `${field ? `${field} must be` : "expected"} an array of messages, got ${got}`);
  }
  let next = 0;
  for (let index = 0; index < output.length; index++) {
    const message: unknown = output[index];
    const element = field ? `${field}[${index}]` : `element ${index}`;
    const at = input.indexOf(message as AgentMessage, next);
    if (at >= 0) next = at + 1;
    else {
      const parsed = agentMessageSchema.safeParse(message);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        const path = issue && issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
        throw invalid(stage, `${element} is no message: ${path}${issue?.message ?? "invalid"}`);
      }
    }
    const { role } = message as AgentMessage;
    if (llmOnly && !LLM_ROLES.has(role))
      throw invalid(
        stage,
        `${element} has role "${role}": the model takes user, assistant and toolResult messages`,
      );
  }
  return output as T[];
}

function invalid(stage: string, problem: string): TypeError {
  return new TypeError(`${stage} returned an invalid result: ${problem}.`);
}

function isThenable(value: unknown): boolean {
  return typeof (value as { then?: unknown } | null)?.then === "function";
}
