import "@agent-core/agentic";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseAgentOptions } from "../agent-options.js";
import { createDemoModel } from "../demo-model.js";
import { ChatSession } from "./chat-session.js";
import { historyLines } from "./history-lines.js";
import { parseSlashCommand } from "./slash-commands.js";

const dir = mkdtempSync(join(tmpdir(), "agent-core-chat-session-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A session on the demo model, with everything it shows collected: `screen` in order, problems apart. */
function chat(chunkDelayMs = 0) {
  const seen = { screen: "", problems: [] as string[], running: [] as boolean[] };
  const session = new ChatSession(
    {
      agent: parseAgentOptions({}, {}),
      model: { model: createDemoModel({ chunkDelayMs }), label: "demo", demo: true },
    },
    {
      out: { write: (text: string) => (seen.screen += text) },
      color: false,
      echo: (line) => (seen.screen += `> ${line}\n`),
      notice: (text) => (seen.screen += `${text}\n`),
      problem: (text) => seen.problems.push(text),
      runningChanged: (running) => seen.running.push(running),
    },
  );
  return { session, seen };
}

async function until(check: () => boolean): Promise<void> {
  for (let waited = 0; !check(); waited += 10) {
    if (waited > 5000) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("ChatSession", () => {
  it("keeps one history across prompts: the second answer reads the first prompt back", async () => {
    const { session, seen } = chat();
    expect(await session.enter("What is 2+3?")).toBeUndefined();
    await session.enter("What did I ask before?");
    expect(seen.screen).toContain("> What is 2+3?\n▶ [demo] demo · orchestrator agentic\n");
    expect(seen.screen).toContain("[demo] 2+3 = 5.");
    expect(seen.screen).toContain('[demo] Before this you asked: "What is 2+3?".');
    expect(session.messages.map((message) => message.role)).toEqual([
      "user",
      "assistant",
      "toolResult",
      "assistant",
      "user",
      "assistant",
    ]);
    expect(seen.running).toEqual([true, false, true, false]);
    expect(session.failures).toBe(0);
  });

  it("queues a line entered during a run as steering, and the run takes it", async () => {
    const { session, seen } = chat(20);
    const working = session.enter("What is 15*3 and 10+5?");
    await until(() => seen.screen.includes("· thinking:"));
    expect(session.running).toBe(true);
    expect(await session.enter("what is 2+2")).toBeUndefined();
    expect(seen.screen).toContain("↪ queued: what is 2+2\n");
    await working;
    expect(seen.screen).toContain("↪ steering: user: what is 2+2");
    expect(seen.screen).toContain("[demo] 2+2 = 4.");
    expect(session.running).toBe(false);
  });

  it("aborts the run, drops what was queued for it, and counts it as a failure", async () => {
    const { session, seen } = chat(20);
    expect(session.abort()).toBe(false);
    const working = session.enter("What is 15*3?");
    await until(() => seen.screen.includes("· thinking:"));
    await session.enter("and 2+2");
    expect(session.abort()).toBe(true);
    await working;
    expect(seen.screen).toContain("■ aborted");
    expect(seen.screen).toContain("dropped 1 queued message: the run ended aborted\n");
    expect(session.failures).toBe(1);
    expect(session.messages.map((message) => message.role)).toEqual(["user"]);
  });

  it("saves, resets and loads the conversation; a bad file changes nothing", async () => {
    const { session, seen } = chat();
    await session.enter("What is 2+3?");
    const file = join(dir, "chat.json");
    await session.enter(`/save ${file}`);
    expect(seen.screen).toContain(`saved 4 messages to ${file}\n`);
    const before = session.messages;

    await session.enter("/reset");
    expect(session.messages).toEqual([]);
    await session.enter(`/load ${file}`);
    expect(seen.screen).toContain(`loaded 4 messages from ${file}\n`);
    expect(session.messages).toEqual(before);

    const bad = join(dir, "bad.json");
    writeFileSync(bad, '{"version":1,"messages":"none"}');
    await session.enter(`/load ${bad}`);
    expect(seen.problems.at(-1)).toMatch(
      /^.*bad\.json: not a conversation: messages: .* The conversation is unchanged\.$/,
    );
    expect(session.messages).toEqual(before);
    // The history goes on from the loaded messages.
    await session.enter("What did I ask before?");
    expect(seen.screen).toContain('Before this you asked: "What is 2+3?".');
  });

  it("answers /help and /history, and refuses what it cannot do, at once during a run too", async () => {
    const { session, seen } = chat(20);
    await session.enter("/help");
    expect(seen.screen).toContain("/save FILE");
    await session.enter("/history");
    expect(seen.screen).toContain("the conversation is empty.\n");
    await session.enter("/save");
    await session.enter("/load   ");
    await session.enter("/frobnicate now");
    const working = session.enter("What is 15*3?");
    // Nothing to wait for: refused as the run goes on.
    await session.enter("/frobnicate");
    await session.enter("/save");
    expect(session.running).toBe(true);
    expect(seen.problems).toEqual([
      "/save needs a file name: /save chat.json",
      "/load needs a file name: /load chat.json",
      "unknown command /frobnicate; /help lists the commands.",
      "unknown command /frobnicate; /help lists the commands.",
      "/save needs a file name: /save chat.json",
    ]);
    expect(seen.screen).not.toContain("will run when the run ends");
    expect(await session.enter("/exit")).toBe("exit");
    await working;
    expect(seen.screen).toContain("■ aborted");
    expect(session.running).toBe(false);
  });

  it("carries out /save, /history and /reset typed during a run when it ends, in the order typed", async () => {
    const { session, seen } = chat(20);
    const file = join(dir, "during-run.json");
    const working = session.enter("What is 15*3?");
    await until(() => seen.screen.includes("· thinking:"));
    const commands = [session.enter(`/save ${file}`), session.enter("/history"), session.enter("/reset")];
    expect(seen.screen).toContain(
      `↪ /save ${file} will run when the run ends\n↪ /history will run when the run ends\n↪ /reset will run when the run ends\n`,
    );
    expect(session.running).toBe(true);
    expect(existsSync(file)).toBe(false);
    await Promise.all([working, ...commands]);
    // After the run's end is shown, each command as if entered then.
    const after = seen.screen.slice(seen.screen.indexOf("■ completed"));
    expect(after).toMatch(
      new RegExp(
        `^■ completed [^\n]*\n> /save ${file}\nsaved 4 messages to ${file}\n> /history\n1\\. user: What is 15\\*3\\?\n(.*\n){3}> /reset\nnew conversation: the history is empty.\n$`,
      ),
    );
    expect(JSON.parse(readFileSync(file, "utf8")).messages).toHaveLength(4);
    expect(session.messages).toEqual([]);
    expect(seen.problems).toEqual([]);
    expect(session.failures).toBe(0);
  });

  it("carries out a command typed during a run that is aborted, after the abort is shown", async () => {
    const { session, seen } = chat(20);
    const file = join(dir, "aborted-run.json");
    const working = session.enter("What is 15*3?");
    await until(() => seen.screen.includes("· thinking:"));
    const saving = session.enter(`/save ${file}`);
    expect(session.abort()).toBe(true);
    await Promise.all([working, saving]);
    expect(seen.screen.indexOf(`saved 1 message to ${file}`)).toBeGreaterThan(
      seen.screen.indexOf("■ aborted"),
    );
    expect(JSON.parse(readFileSync(file, "utf8")).messages).toMatchObject([
      { role: "user", content: "What is 15*3?" },
    ]);
    // The run did not complete; the command did its work.
    expect(session.failures).toBe(1);
  });

  it("/exit during a run aborts it, carries out the commands typed before it, and leaves", async () => {
    const { session, seen } = chat(20);
    const working = session.enter("What is 15*3?");
    await until(() => seen.screen.includes("· thinking:"));
    const reset = session.enter("/reset");
    expect(await session.enter("/exit")).toBe("exit");
    expect(session.running).toBe(false);
    expect(seen.screen.indexOf("new conversation: the history is empty.")).toBeGreaterThan(
      seen.screen.indexOf("■ aborted"),
    );
    expect(session.messages).toEqual([]);
    await Promise.all([working, reset]);
  });

  it("starts a prompt entered while a command is carried out once the command is done", async () => {
    const { session, seen } = chat();
    const file = join(dir, "before-prompt.json");
    const saving = session.enter(`/save ${file}`);
    const asking = session.enter("What is 2+3?");
    await Promise.all([saving, asking]);
    expect(seen.screen.indexOf("> What is 2+3?")).toBeGreaterThan(
      seen.screen.indexOf(`saved 0 messages to ${file}`),
    );
    expect(seen.screen).toContain("[demo] 2+3 = 5.");
  });

  it("echoes a piped line's control characters as symbols; the model gets the line as it is", async () => {
    const { session, seen } = chat();
    await session.enter("What is 2+3?\x1b[2J");
    expect(seen.screen).toContain("> What is 2+3?␛[2J\n");
    expect(session.messages[0]).toMatchObject({ role: "user", content: "What is 2+3?\x1b[2J" });
  });

  it("ignores blank lines", async () => {
    const { session, seen } = chat();
    await session.enter("   ");
    expect(seen.screen).toBe("");
  });
});

describe("parseSlashCommand and historyLines", () => {
  it("reads a command name and its argument, and leaves prompts alone", () => {
    expect(parseSlashCommand("  /SAVE  my chat.json ")).toEqual({ name: "save", argument: "my chat.json" });
    expect(parseSlashCommand("/")).toEqual({ name: "", argument: "" });
    expect(parseSlashCommand("what is 1/2?")).toBeUndefined();
  });

  it("gives each message one numbered line, cut short", () => {
    const lines = historyLines([
      { role: "user", content: [{ type: "text", text: "hi\nthere" }] },
      { role: "assistant", content: [{ type: "toolCall", id: "c", name: "calculator", args: { e: "1" } }] },
      {
        role: "toolResult",
        toolCallId: "c",
        toolName: "calculator",
        content: "1",
        isError: false,
        status: "ok",
      },
      { role: "assistant", content: [{ type: "text", text: "x".repeat(200) }] },
      { role: "app-note", text: "n" },
    ]);
    expect(lines.slice(0, 3)).toEqual([
      "1. user: hi there",
      '2. assistant: → calculator({"e":"1"})',
      "3. ← calculator ok: 1",
    ]);
    expect(lines[3]).toHaveLength(101);
    expect(lines[4]).toBe('5. app-note: {"role":"app-note","text":"n"}');
  });

  it("shows a loaded file's control characters as symbols, so /history cannot drive the terminal", () => {
    const [line] = historyLines([{ role: "user", content: "hi\x1b[2J\x1b]0;owned\x07\x9b" }]);
    expect(line).toBe("1. user: hi␛[2J␛]0;owned␇�");
  });
});
