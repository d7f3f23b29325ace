import { describe, expect, it } from "vitest";
import { z } from "zod";
import { InvalidConfigError } from "../errors.js";
import {
  type EventSchema,
  eventSchemaFor,
  InvalidEventError,
  parseAgentEvent,
  registerEventSchema,
  safeParseAgentEvent,
} from "./event-registry.js";
import { defineEventSchema, eventSchemas } from "./schemas.js";

// Each test file has its own module instances, so the registry here is this file's alone.
const envelope = { runId: "r1", seq: 3, ts: 1795316865530 };
const critique = defineEventSchema("reflect_critique", { round: z.number().int().positive() });

describe("the event registry", () => {
  it("knows core's events from the start", () => {
    const thinking = { type: "thinking", ...envelope, text: "hmm" };
    expect(parseAgentEvent(thinking)).toEqual(thinking);
    expect(eventSchemaFor("tool_call")).toBe(eventSchemas.tool_call);
  });

  it("validates a plug-in's event once it is registered, and not before", () => {
    const event = { type: "reflect_critique", ...envelope, round: 1 };
    const before = safeParseAgentEvent(event);
    expect(before.success).toBe(false);
    expect(before.success || before.error.message).toMatch(
      /^Unknown event type "reflect_critique"\. Known types: agent_start, .*custom, error, agent_end\. A plug-in's events are known once its package is imported\.$/,
    );

    registerEventSchema("reflect_critique", critique);
    expect(parseAgentEvent(event)).toEqual(event);
    expect(eventSchemaFor("reflect_critique")).toBe(critique);
    expect(() => parseAgentEvent({ ...event, round: 0 })).toThrow(
      /^Invalid "reflect_critique" event:\n.+\n.+at round$/,
    );
  });

  it("accepts the same schema twice (a package loaded again) but no other schema for that type", () => {
    const type = "reflect_verdict";
    const verdict = defineEventSchema(type, { verdict: z.enum(["accept", "revise"]) });
    registerEventSchema(type, verdict);
    expect(() => registerEventSchema(type, verdict)).not.toThrow();
    const other = defineEventSchema(type, { verdict: z.string() });
    expect(() => registerEventSchema(type, other)).toThrow(
      new InvalidConfigError(
        `The event type "${type}" is already registered with another schema: two plug-ins cannot share a type, so namespace yours.`,
      ),
    );
    expect(eventSchemaFor(type)).toBe(verdict);
  });

  it("accepts a schema of the same definition (a package installed twice: each copy builds its own)", () => {
    const type = "reflect_score";
    // What each copy of the plug-in's module runs on import: the same source, new schema objects.
    const loadPlugin = () => {
      const score = defineEventSchema(type, {
        score: z.number().min(0).max(1),
        reasons: z.array(z.string().regex(/^\w/)).optional(),
        verdict: z.enum(["accept", "revise"]).refine((verdict) => verdict !== "revise", "no revisions"),
      });
      registerEventSchema(type, score);
      return score;
    };
    const first = loadPlugin();
    expect(() => loadPlugin()).not.toThrow();
    expect(eventSchemaFor(type)).toBe(first);

    const otherBound = defineEventSchema(type, {
      score: z.number().min(0).max(10),
      reasons: z.array(z.string().regex(/^\w/)).optional(),
      verdict: z.enum(["accept", "revise"]).refine((verdict) => verdict !== "revise", "no revisions"),
    });
    const otherCheck = defineEventSchema(type, {
      score: z.number().min(0).max(1),
      reasons: z.array(z.string().regex(/^\w/)).optional(),
      verdict: z.enum(["accept", "revise"]).refine((verdict) => verdict === "revise", "no revisions"),
    });
    for (const other of [otherBound, otherCheck])
      expect(() => registerEventSchema(type, other)).toThrow(
        new InvalidConfigError(
          `The event type "${type}" is already registered with another schema: two plug-ins cannot share a type, so namespace yours.`,
        ),
      );
    expect(eventSchemaFor(type)).toBe(first);
  });

  it("refuses a core type, an empty type and a schema that is not one", () => {
    const toolCall = defineEventSchema("tool_call", { anything: z.unknown() });
    expect(() => registerEventSchema("tool_call", toolCall)).toThrow(
      new InvalidConfigError('"tool_call" is a core event type: a plug-in cannot register it.'),
    );
    expect(eventSchemaFor("tool_call")).toBe(eventSchemas.tool_call);
    expect(() => registerEventSchema(" ", critique as unknown as EventSchema<" ">)).toThrow(
      InvalidConfigError,
    );
    expect(() => registerEventSchema("loose", {} as EventSchema<"loose">)).toThrow(
      /registerEventSchema\("loose"\) needs a zod schema/,
    );
  });

  // Either would pass every check and be wrong for every event: a type no event has, a parse that
  // strips `runId`, `seq` and `ts`, a type field that takes no event of the type.
  it("refuses a padded type and a schema that would get the type's events wrong", () => {
    expect(() =>
      registerEventSchema(
        " probe_padded",
        defineEventSchema(" probe_padded", {}) as EventSchema<" probe_padded">,
      ),
    ).toThrow(
      new InvalidConfigError(
        'registerEventSchema(" probe_padded"): an event type has no surrounding whitespace.',
      ),
    );
    const noEnvelope = z.object({ type: z.literal("probe_bare"), n: z.number() });
    expect(() =>
      registerEventSchema("probe_bare", noEnvelope as unknown as EventSchema<"probe_bare">),
    ).toThrow(
      new InvalidConfigError(
        'registerEventSchema("probe_bare"): the schema has no runId, seq, ts (the envelope every event carries); build it with defineEventSchema("probe_bare", { … }).',
      ),
    );
    const otherType = defineEventSchema("probe_other", {});
    expect(() =>
      registerEventSchema("probe_named", otherType as unknown as EventSchema<"probe_named">),
    ).toThrow(
      'registerEventSchema("probe_named"): the schema has a "type" field that does not take "probe_named"',
    );
    for (const type of [" probe_padded", "probe_bare", "probe_named"])
      expect(eventSchemaFor(type)).toBeUndefined();
  });

  // A plug-in's schema may throw, or need an async parse (an async refinement): a consumer reading
  // a stream of events must still get its answer, not that schema's exception.
  it("says so, without throwing, when a registered schema throws or cannot parse synchronously", () => {
    const throwing = defineEventSchema("probe_throwing", {}).refine(() => {
      throw new Error("the check broke");
    });
    const asynchronous = defineEventSchema("probe_async", {}).refine(async () => true);
    registerEventSchema("probe_throwing", throwing);
    registerEventSchema("probe_async", asynchronous);
    for (const type of ["probe_throwing", "probe_async"]) {
      const result = safeParseAgentEvent({ type, ...envelope });
      expect(result.success).toBe(false);
      if (result.success) return;
      expect(result.error).toBeInstanceOf(InvalidEventError);
      expect(result.error.message).toMatch(
        new RegExp(`^The schema registered for "${type}" failed instead of judging the event: .+`),
      );
      expect(result.error.cause).toBeInstanceOf(Error);
      expect(() => parseAgentEvent({ type, ...envelope })).toThrow(InvalidEventError);
    }
  });

  it("says why a core event fails its schema, naming the field", () => {
    const result = safeParseAgentEvent({ type: "tool_result", ...envelope, toolCallId: "c1", toolName: "x" });
    expect(result.success).toBe(false);
    if (result.success) return;
    expect(result.error).toBeInstanceOf(InvalidEventError);
    expect(result.error.code).toBe("invalid_event");
    expect(result.error.message).toMatch(/^Invalid "tool_result" event:\n.*\n.*at status/);
    expect(result.error.cause).toBeInstanceOf(z.ZodError);
  });

  it.each([null, undefined, "thinking", 42, { text: "no type" }, { type: 7 }])(
    "refuses %j: not an event",
    (value) => {
      expect(() => parseAgentEvent(value)).toThrow(
        new InvalidEventError('An event is an object with a string "type".'),
      );
    },
  );
});
