import type { Agent, AgentMessage, MessageInput, RunResult } from "@agent-core/core";
import { type AgentOptions, createCliAgent } from "../agent-options.js";
import type { ModelChoice } from "../provider.js";
import { createHumanRenderer, plural, printable, type TextSink } from "../render.js";
import { loadConversation, saveConversation } from "./conversation-file.js";
import { historyLines } from "./history-lines.js";
import { CHAT_KEYS_HELP, parseSlashCommand, type SlashCommand } from "./slash-commands.js";

/** Where a chat shows itself: the terminal's screen, or stdout and stderr for piped input. */
export interface ChatView {
  /** The live view of runs goes here. */
  out: TextSink;
  color: boolean;
  /** A line the person entered (a prompt or a command), shown back in the conversation. */
  echo(line: string): void;
  /** A line about the session (queued, saved, loaded), on a line of its own. */
  notice(text: string): void;
  /** A line about something that did not work (a bad file, an unknown command). */
  problem(text: string): void;
  /** Called when a run starts or the last one ends. */
  runningChanged?(running: boolean): void;
}

export interface ChatSessionOptions {
  agent: AgentOptions;
  model: ModelChoice;
  /** The history to start from (`--load`). */
  messages?: readonly AgentMessage[];
}

/** What the person asked the session for, beside going on. */
export type ChatOutcome = "exit" | undefined;

/**
 * One conversation: one agent whose history carries over from prompt to prompt, the runs it is
 * working on, and the slash commands. It knows nothing of keys or terminals: a line comes in,
 * output goes to the view.
 *
 * It does one thing at a time, in the order the lines came: a prompt's runs, or a command. A line
 * that comes while a run works steers it; a command that needs the run to end (/save, /load,
 * /history, /reset) waits its turn and is carried out when the run has ended, however it ended.
 */
export class ChatSession {
  readonly #options: ChatSessionOptions;
  readonly #view: ChatView;
  #agent: Agent;
  /** Aborts the run in progress; undefined when idle. */
  #abort: AbortController | undefined;
  /** The runs of the last prompt (with the messages they left queued), until the last one ends. */
  #working: Promise<void> | undefined;
  /** Settles when everything entered so far is done: each prompt's runs and each command, in turn. */
  #turns: Promise<void> = Promise.resolve();
  /** How many of them are not done yet. */
  #pending = 0;
  /** Set by leave(): a prompt still waiting for its turn is not run. */
  #leaving = false;
  #failures = 0;

  constructor(options: ChatSessionOptions, view: ChatView) {
    this.#options = options;
    this.#view = view;
    this.#agent = createCliAgent(options.agent, options.model.model, options.messages);
  }

  get running(): boolean {
    return this.#working !== undefined;
  }

  /** Runs that did not complete and commands that failed: a script's reason to exit 1. */
  get failures(): number {
    return this.#failures;
  }

  get messages(): AgentMessage[] {
    return this.#agent.messages;
  }

  /**
   * A line the person entered: a slash command, a prompt, or (while a run works) a steering
   * message. Resolves once what it started is over: a prompt when its runs have ended, a command
   * typed during a run once it has been carried out after the run.
   */
  async enter(line: string): Promise<ChatOutcome> {
    const text = line.trim();
    if (text === "") return undefined;
    const command = parseSlashCommand(text);
    if (command !== undefined) return this.#command(command, printable(text));
    if (this.running) {
      this.#agent.steer(text);
      this.#view.notice(`↪ queued: ${printable(text)}`);
      return undefined;
    }
    await this.#inTurn(async () => {
      if (this.#leaving) return;
      this.#view.echo(printable(text));
      await this.#work(text);
    });
    return undefined;
  }

  /** Aborts the run in progress; false when there is none. */
  abort(): boolean {
    if (this.#abort === undefined) return false;
    this.#abort.abort();
    return true;
  }

  /** Resolves when everything entered so far is done (at once when idle). */
  async idle(): Promise<void> {
    await this.#turns;
  }

  /**
   * Ends the session (/exit, Ctrl-D, a SIGINT): aborts the run in progress, carries out the
   * commands typed before, and runs no prompt that still waits for its turn.
   */
  async leave(): Promise<void> {
    this.#leaving = true;
    this.abort();
    await this.idle();
  }

  async #command(command: SlashCommand, line: string): Promise<ChatOutcome> {
    const { name, argument } = command;
    if (name === "exit") {
      this.#view.echo(line);
      await this.leave();
      return "exit";
    }
    if (name === "help") {
      this.#view.echo(line);
      for (const text of CHAT_KEYS_HELP.trimEnd().split("\n")) this.#view.notice(text);
      return undefined;
    }
    // Refused at once, while a run works too: there is nothing to wait for.
    const refusal = refused(command);
    if (refusal !== undefined) {
      this.#view.echo(line);
      this.#fail(refusal);
      return undefined;
    }
    if (this.running) this.#view.notice(`↪ ${line} will run when the run ends`);
    await this.#inTurn(async () => {
      this.#view.echo(line);
      await this.#carryOut(name, argument);
    });
    return undefined;
  }

  /** /save, /load, /history or /reset, when nothing else is under way. */
  async #carryOut(name: string, argument: string): Promise<void> {
    switch (name) {
      case "history":
        return this.#history();
      case "reset":
        this.#agent.reset();
        return this.#view.notice("new conversation: the history is empty.");
      case "save":
        return this.#save(argument);
      case "load":
        return this.#load(argument);
    }
  }

  /**
   * `task` once everything entered before it is done (at once when nothing is): so a command typed
   * during a run is carried out after it, and a prompt typed as commands are carried out waits for them.
   */
  #inTurn(task: () => Promise<void>): Promise<void> {
    const turn = this.#pending === 0 ? task() : this.#turns.then(task);
    this.#pending++;
    this.#turns = turn.then(
      () => void this.#pending--,
      () => void this.#pending--,
    );
    return turn;
  }

  #history(): void {
    const lines = historyLines(this.#agent.messages);
    if (lines.length === 0) this.#view.notice("the conversation is empty.");
    for (const line of lines) this.#view.notice(line);
  }

  async #save(file: string): Promise<void> {
    const messages = this.#agent.messages;
    try {
      await saveConversation(file, messages);
      this.#view.notice(`saved ${plural(messages.length, "message")} to ${file}`);
    } catch (error) {
      this.#fileProblem(error);
    }
  }

  async #load(file: string): Promise<void> {
    try {
      const messages = await loadConversation(file);
      this.#agent = createCliAgent(this.#options.agent, this.#options.model.model, messages);
      this.#view.notice(`loaded ${plural(messages.length, "message")} from ${file}`);
    } catch (error) {
      this.#fileProblem(error);
    }
  }

  /** A file the session could not use (a `ConversationFileError`, or the agent refusing the history). */
  #fileProblem(error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    this.#fail(`${message} The conversation is unchanged.`);
  }

  #fail(text: string): void {
    this.#failures++;
    this.#view.problem(text);
  }

  /** Never rejects: a run that throws (a bug) is reported as a failure, and the chat goes on. */
  #work(prompt: string): Promise<void> {
    const working = this.#runAll(prompt)
      .catch((error: unknown) =>
        this.#fail(`the run failed: ${error instanceof Error ? error.message : error}`),
      )
      .finally(() => {
        this.#working = undefined;
        this.#abort = undefined;
        this.#view.runningChanged?.(false);
      });
    this.#working = working;
    this.#view.runningChanged?.(true);
    return working;
  }

  /** The prompt's run, then a run for the steering messages it ended before taking, and so on. */
  async #runAll(prompt: string): Promise<void> {
    let input: MessageInput | MessageInput[] | undefined = prompt;
    while (input !== undefined && !this.#leaving) {
      const result = await this.#runOne(input);
      input = this.#leftOver(result);
    }
  }

  async #runOne(input: MessageInput | MessageInput[]): Promise<RunResult> {
    const abort = new AbortController();
    this.#abort = abort;
    const run = this.#agent.prompt(input, { signal: abort.signal });
    const { label, demo } = this.#options.model;
    const render = createHumanRenderer(this.#view.out, {
      color: this.#view.color,
      model: label,
      demo,
      orchestrator: this.#agent.orchestrator.name,
    });
    for await (const event of run) render(event);
    const result = await run.result();
    if (result.stopReason !== "completed") this.#failures++;
    return result;
  }

  /**
   * Steering typed while the run wrote its last answer reaches no next step: after a completed run
   * it starts the next one, as if sent then. After an abort (or a failure) it is dropped: the
   * person stopped the run, and a message left queued would surprise them in their next prompt.
   */
  #leftOver(result: RunResult): AgentMessage[] | undefined {
    const { steering, followUps } = this.#agent.takeQueued();
    const left = [...steering, ...followUps];
    if (left.length === 0) return undefined;
    if (result.stopReason === "completed") {
      this.#view.notice(`↪ continuing with ${plural(left.length, "queued message")}`);
      return left;
    }
    this.#view.notice(`dropped ${plural(left.length, "queued message")}: the run ended ${result.stopReason}`);
    return undefined;
  }
}

/** The commands carried out in turn: a run in progress ends first. */
const IN_TURN = ["save", "load", "history", "reset"];

/** Why a command of those cannot be carried out (an unknown one, a file name missing), or undefined. */
function refused({ name, argument }: SlashCommand): string | undefined {
  if (!IN_TURN.includes(name)) return `unknown command /${name}; /help lists the commands.`;
  if ((name === "save" || name === "load") && argument === "")
    return `/${name} needs a file name: /${name} chat.json`;
  return undefined;
}
