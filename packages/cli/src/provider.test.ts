import { describe, expect, it } from "vitest";
import { DEMO_LABEL, modelFromEnv } from "./provider.js";
import { UsageError } from "./usage-error.js";

describe("modelFromEnv", () => {
  it("uses the offline demo model without an API key", () => {
    const choice = modelFromEnv({});
    expect(choice).toMatchObject({ label: DEMO_LABEL, demo: true });
    expect(choice.model.provider).toBe("agent-core-demo");
    expect(DEMO_LABEL).toContain("OPENAI_API_KEY");
  });

  it("treats an empty API key as unset", () => {
    expect(modelFromEnv({ OPENAI_API_KEY: "" }).demo).toBe(true);
  });

  it("uses gpt-4o-mini at OpenAI by default when a key is set", () => {
    const choice = modelFromEnv({ OPENAI_API_KEY: "sk-test" });
    expect(choice).toMatchObject({ label: "gpt-4o-mini via https://api.openai.com/v1", demo: false });
    expect(choice.model.modelId).toBe("gpt-4o-mini");
    expect(choice.model.provider).toBe("openai-compatible.chat");
  });

  it("takes the base URL and the model from the environment (Ollama, vLLM, ...)", () => {
    const choice = modelFromEnv({
      OPENAI_API_KEY: "ollama",
      OPENAI_BASE_URL: "http://localhost:11434/v1",
      AGENT_CORE_MODEL: "llama3.2",
    });
    expect(choice.label).toBe("llama3.2 via http://localhost:11434/v1");
    expect(choice.model.modelId).toBe("llama3.2");
  });

  it("rejects an OPENAI_BASE_URL that is not an http(s) URL, as --base-url is rejected", () => {
    for (const url of [
      "localhost:11434/v1",
      "ftp://example.test/v1",
      "FTP://example.test/v1",
      "http:///v1",
      "http:x",
      "not a url",
    ])
      expect(() => modelFromEnv({ OPENAI_API_KEY: "k", OPENAI_BASE_URL: url })).toThrow(
        `OPENAI_BASE_URL must be an http:// or https:// URL, got "${url}".`,
      );
    // Without a key the demo model answers, and the variable is not used.
    expect(modelFromEnv({ OPENAI_BASE_URL: "localhost:11434/v1" }).demo).toBe(true);
  });

  it("takes an http(s) scheme in any case, as URLs do", () => {
    for (const url of ["HTTP://localhost:11434/v1", "Https://api.example.test/v1"])
      expect(modelFromEnv({ OPENAI_API_KEY: "k", OPENAI_BASE_URL: url }).label).toBe(
        `gpt-4o-mini via ${url}`,
      );
  });

  it("rejects a demo delay that is not a whole number", () => {
    expect(() => modelFromEnv({ AGENT_CORE_DEMO_DELAY_MS: "fast" })).toThrow(UsageError);
    expect(modelFromEnv({ AGENT_CORE_DEMO_DELAY_MS: "0" }).demo).toBe(true);
  });
});
