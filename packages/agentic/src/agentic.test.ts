import { AgentConfigError, InvalidConfigError } from "@agent-core/core";
import { describe, expect, it } from "vitest";
import { agentic } from "./agentic.js";

describe("agentic options", () => {
  const messageOf = (options: unknown) => {
    try {
      agentic(options as never);
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidConfigError);
      expect(error).toBeInstanceOf(AgentConfigError);
      return (error as Error).message;
    }
    throw new Error(`agentic(${JSON.stringify(options)}) was accepted`);
  };

  it("refuses a blank name or one that is not a string, and an instruction that is not a string", () => {
    expect(messageOf({ name: "" })).toBe('Invalid agentic options: name must be a non-blank string, got "".');
    expect(messageOf({ name: "  " })).toBe(
      'Invalid agentic options: name must be a non-blank string, got "  ".',
    );
    expect(messageOf({ name: 1 })).toBe("Invalid agentic options: name must be a non-blank string, got 1.");
    expect(messageOf({ steeringInstruction: 42 })).toBe(
      "Invalid agentic options: steeringInstruction must be a string, got 42.",
    );
    expect(messageOf(null)).toBe("Invalid agentic options: options must be an object, got null.");
  });

  it("names every bad field at once", () => {
    expect(messageOf({ name: null, steeringInstruction: ["x"] })).toBe(
      [
        "Invalid agentic options:",
        "- name must be a non-blank string, got null.",
        '- steeringInstruction must be a string, got ["x"].',
      ].join("\n"),
    );
  });

  it("accepts good values, and refuses a key it does not know as new Agent() does", () => {
    expect(agentic({ name: "mine", steeringInstruction: "" }).name).toBe("mine");
    expect(agentic().name).toBe("agentic");
    expect(messageOf({ nmae: "mine" })).toBe(
      "Invalid agentic options: nmae is not a setting (known: name, steeringInstruction).",
    );
  });
});
