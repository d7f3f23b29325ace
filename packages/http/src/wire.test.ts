import { describe, expect, it } from "vitest";
import { formatFor } from "./wire.js";

const asking = (accept?: string) =>
  formatFor(
    new Request("http://localhost/runs/r1/events", accept === undefined ? {} : { headers: { accept } }),
  );

describe("formatFor", () => {
  it("streams NDJSON unless Accept asks for SSE", () => {
    expect(asking()).toBe("ndjson");
    expect(asking("*/*")).toBe("ndjson");
    expect(asking("application/x-ndjson")).toBe("ndjson");
    expect(asking("text/event-stream")).toBe("sse");
    expect(asking("Text/Event-Stream")).toBe("sse");
    expect(asking("application/json, text/event-stream;q=0.5")).toBe("sse");
  });

  it("does not choose SSE that Accept refuses with q=0", () => {
    expect(asking("text/event-stream;q=0")).toBe("ndjson");
    expect(asking("text/event-stream; q=0.0, */*")).toBe("ndjson");
  });

  it("chooses the framing of the higher quality, SSE on a tie", () => {
    expect(asking("text/event-stream;q=0.4, application/x-ndjson;q=0.9")).toBe("ndjson");
    expect(asking("application/x-ndjson;q=0.4, text/event-stream")).toBe("sse");
    expect(asking("text/event-stream, application/x-ndjson")).toBe("sse");
  });

  it("reads a q that is not a number from 0 to 1 as 1", () => {
    expect(asking("text/event-stream;q=abc")).toBe("sse");
    expect(asking("text/event-stream;q=")).toBe("sse");
    expect(asking("text/event-stream;q=2, application/x-ndjson;q=0.9")).toBe("sse");
  });
});
