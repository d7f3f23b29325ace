import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { TmuxTerminal } from "./tmux-terminal.js";

// `agent-core chat` as a person uses it: the bin from its sources in a real pseudo-terminal (a
// tmux pane), keys typed into it, the screen read back. The offline demo model streams slowly
// enough (AGENT_CORE_DEMO_DELAY_MS) that there is time to type while a run works.

const root = fileURLToPath(new URL("..", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "agent-core-chat-"));
const BIN = ["node", "--import", "tsx", "--conditions=@agent-core/source", "packages/cli/src/bin.ts", "chat"];

let terminal: TmuxTerminal | undefined;
afterEach(() => terminal?.kill());
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function startChat(delayMs: number, ...args: string[]): TmuxTerminal {
  terminal = TmuxTerminal.start([...BIN, ...args], {
    cwd: root,
    env: { AGENT_CORE_DEMO_DELAY_MS: String(delayMs) },
    unset: ["OPENAI_API_KEY", "NO_COLOR"],
  });
  return terminal;
}

/** The chat is idle again: the cursor is back on an empty "you ›" line. */
const idle = (chat: TmuxTerminal) => () => chat.cursorLine() === "you ›";

async function ask(chat: TmuxTerminal, prompt: string, answer: string): Promise<string> {
  chat.type(prompt);
  chat.press("Enter");
  await chat.waitFor(answer);
  await chat.waitFor(idle(chat));
  // Read again: the screen `waitFor` returns was captured before the cursor was found idle, and the
  // run may have ended (its summary printed) in between.
  return chat.screen();
}

describe("agent-core chat in a terminal", () => {
  it("keeps the conversation across prompts, saves it, and a new chat loads it", {
    timeout: 120_000,
  }, async () => {
    const file = join(dir, "chat.json");
    const chat = startChat(10);
    await chat.waitFor("/help lists the commands");

    const first = await ask(chat, "What is 15*3 and 10+5?", "15*3 = 45 and 10+5 = 15");
    // The live view: the prompt, the header, the reasoning, each tool call and result, the summary.
    for (const line of [
      "you › What is 15*3 and 10+5?",
      "orchestrator agentic",
      "· thinking: The question needs the calculator for 15*3 and 10+5.",
      '→ calculator({"expression":"15*3"})',
      '← calculator: {"expression":"10+5","result":15}',
    ])
      expect(first).toContain(line);
    expect(first).toMatch(/■ completed · 2 cycles · 2 tool calls/);

    // The follow-up is answered from the history: the demo model reads the earlier prompt back.
    await ask(chat, "What did I ask before?", 'Before this you asked: "What is 15*3 and 10+5?".');

    chat.type(`/save ${file}`);
    chat.press("Enter");
    await chat.waitFor(`saved 7 messages to ${file}`);
    const saved = JSON.parse(readFileSync(file, "utf8"));
    expect(saved.version).toBe(1);
    expect(saved.messages.map((message: { role: string }) => message.role)).toEqual([
      "user",
      "assistant",
      "toolResult",
      "toolResult",
      "assistant",
      "user",
      "assistant",
    ]);
    chat.press("C-d");
    await chat.waitFor("[exited 0]");
    chat.kill();

    // A new chat, started with a conversation of one message: a bad file is refused with one line
    // and changes nothing; the saved one loads in its place.
    const one = join(dir, "one.json");
    writeFileSync(one, JSON.stringify({ ...saved, messages: saved.messages.slice(0, 1) }));
    const bad = join(dir, "bad.json");
    writeFileSync(bad, JSON.stringify({ version: 1, messages: [{ role: "user", content: 5 }] }));
    const next = startChat(10, "--load", one);
    await next.waitFor(`loaded 1 message from ${one}`);
    next.type(`/load ${bad}`);
    next.press("Enter");
    await next.waitFor(`✗ ${bad}: not a conversation: messages.0.content:`);
    expect(next.screen()).toContain("The conversation is unchanged.");
    next.type(`/load ${file}`);
    next.press("Enter");
    await next.waitFor(`loaded 7 messages from ${file}`);
    await ask(
      next,
      "What did I ask before?",
      'Before this you asked: "What is 15*3 and 10+5?" and "What did I ask before?".',
    );
    next.type("/exit");
    next.press("Enter");
    await next.waitFor("[exited 0]");
  });

  it("carries out /save and /reset typed during a run once the run has ended", {
    timeout: 120_000,
  }, async () => {
    const file = join(dir, "during-run.json");
    const chat = startChat(120);
    await chat.waitFor("/help lists the commands");
    chat.type("What is 15*3 and 10+5?");
    chat.press("Enter");
    await chat.waitFor("· thinking: The");
    chat.type(`/save ${file}`);
    chat.press("Enter");
    // Queued, not refused: the run goes on, and the file is written once it has ended.
    await chat.waitFor(`↪ /save ${file} will run when the run ends`);
    expect(existsSync(file)).toBe(false);
    const saved = await chat.waitFor(`saved 5 messages to ${file}`);
    expect(saved.indexOf(`saved 5 messages to ${file}`)).toBeGreaterThan(saved.indexOf("■ completed"));
    expect(saved).toContain("15*3 = 45 and 10+5 = 15");
    expect(saved).not.toContain("✗");
    expect(JSON.parse(readFileSync(file, "utf8")).messages).toHaveLength(5);
    await chat.waitFor(idle(chat));

    chat.type("What is 7*6?");
    chat.press("Enter");
    await chat.waitFor((screen) =>
      screen.slice(screen.lastIndexOf("you › What is 7*6?")).includes("· thinking:"),
    );
    chat.type("/reset");
    chat.press("Enter");
    await chat.waitFor("↪ /reset will run when the run ends");
    const reset = await chat.waitFor("new conversation: the history is empty.");
    expect(reset.indexOf("new conversation: the history is empty.")).toBeGreaterThan(
      reset.lastIndexOf("■ completed"),
    );
    expect(reset).toContain("7*6 = 42");
    await chat.waitFor(idle(chat));
    chat.type("/history");
    chat.press("Enter");
    await chat.waitFor("the conversation is empty.");
    chat.press("C-d");
    await chat.waitFor("[exited 0]");
  });

  it("keeps a pasted text of several lines in the line being typed, until Enter sends it", {
    timeout: 60_000,
  }, async () => {
    const chat = startChat(0);
    await chat.waitFor("/help lists the commands");
    // A line break, or a stray Ctrl-C, among the pasted text is not a key.
    chat.paste("What is\n\x032+2?\n");
    await chat.waitFor(() => chat.cursorLine() === "you › What is 2+2?");
    expect(chat.screen()).not.toContain("▶");
    chat.press("Enter");
    await chat.waitFor("[demo] 2+2 = 4.");
    await chat.waitFor(idle(chat));
    expect(chat.screen()).toContain("you › What is 2+2?\n");
  });

  it("queues what is typed during a run as steering, and Esc aborts a run", {
    timeout: 120_000,
  }, async () => {
    const chat = startChat(120);
    await chat.waitFor("/help lists the commands");
    chat.type("What is 15*3 and 10+5?");
    chat.press("Enter");
    await chat.waitFor("· thinking: The");
    // Typed while the run streams: the line below the live view says it steers.
    chat.type("what is 2+2");
    await chat.waitFor(() => chat.cursorLine() === "steer › what is 2+2");
    chat.press("Enter");
    await chat.waitFor("↪ queued: what is 2+2");
    await chat.waitFor("↪ steering: user: what is 2+2");
    await chat.waitFor("[demo] 2+2 = 4.");
    await chat.waitFor(idle(chat));

    chat.type("What is 7*6?");
    chat.press("Enter");
    await chat.waitFor((screen) =>
      screen.slice(screen.lastIndexOf("you › What is 7*6?")).includes("· thinking:"),
    );
    chat.press("Escape");
    const aborted = await chat.waitFor("■ aborted");
    expect(aborted).toContain("✗ aborted: The run was aborted.");
    expect(aborted).not.toContain("7*6 = 42");
    await chat.waitFor(idle(chat));

    // The steering message is part of the conversation; the aborted run left its prompt.
    chat.type("/history");
    chat.press("Enter");
    const history = await chat.waitFor("user: What is 7*6?");
    expect(history).toMatch(/\d+\. user: what is 2\+2/);

    // Esc with a key right behind it (one write: "\x1bwhat", as a quick typist's terminal sends
    // it) still aborts the run, and the key is typed, not swallowed as Alt-w.
    chat.type("What is 9*9?");
    chat.press("Enter");
    await chat.waitFor((screen) =>
      screen.slice(screen.lastIndexOf("you › What is 9*9?")).includes("· thinking:"),
    );
    chat.press("Escape", "what");
    const abortedAgain = await chat.waitFor("■ aborted", { times: 2 });
    expect(abortedAgain).not.toContain("9*9 = 81");
    await chat.waitFor(() => chat.cursorLine() === "you › what");
    chat.press("C-u");

    // Ctrl-C when idle asks first, then leaves.
    chat.press("C-c");
    await chat.waitFor("(Ctrl-C again to exit)");
    chat.press("C-c");
    await chat.waitFor("[exited 0]");
  });
});
