// Importing the packages registers the orchestrators, "agentic" (the default) and "plan-execute",
// and plan-execute's events (their schemas, and their types for the renderer).
import "@agent-core/agentic";
import "@agent-core/plan-execute";
import { createRequire } from "node:module";
import { parseArgs } from "node:util";
import { ORCHESTRATOR_REGISTRY, rootContainer, UnknownOrchestratorError } from "@agent-core/core";
import {
  AGENT_OPTIONS,
  type AgentOptions,
  agentOptionsHelp,
  createCliAgent,
  parseAgentOptions,
} from "./agent-options.js";
import { CHAT_USAGE, type ChatCommand, parseChatCommand, runChat } from "./chat/chat-command.js";
import { CHAT_KEYS_HELP } from "./chat/slash-commands.js";
import type { CliIO } from "./cli-io.js";
import { jsonLinesLogger } from "./json-lines-logger.js";
import { type McpCommand, serveMcp } from "./mcp-command.js";
import { DEFAULT_BASE_URL, DEFAULT_MODEL, modelFromEnv } from "./provider.js";
import { createHumanRenderer, createJsonRenderer, type EventRenderer, printable } from "./render.js";
import { parseServeCommand, type ServeCommand, servePage } from "./serve/serve-command.js";
import { UsageError } from "./usage-error.js";

export { SYSTEM_PROMPT } from "./agent-options.js";
export type { CliIO } from "./cli-io.js";

const EXIT_COMPLETED = 0;
const EXIT_FAILED = 1;
const EXIT_USAGE = 2;

const RUN_USAGE =
  'agent-core run "<prompt>" [--json] [--verbose] [--orchestrator NAME] [--model NAME] [--total-ms N] …';
const MCP_USAGE = "agent-core mcp [--orchestrator NAME] [--system TEXT] [--model NAME] …";
const SERVE_USAGE =
  "agent-core serve [--verbose] [--port N] [--host HOST] [--static DIR] [--model NAME] [--base-url URL] [--database-url URL [--worker-id ID]]";

// Read at run time rather than imported as JSON: package.json lies outside the compiled rootDir.
const { version } = createRequire(import.meta.url)("../package.json") as { version: string };

const OPTIONS = {
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "v" },
  json: { type: "boolean" },
  verbose: { type: "boolean" },
  load: { type: "string" },
  ...AGENT_OPTIONS,
  port: { type: "string" },
  host: { type: "string" },
  static: { type: "string" },
  "database-url": { type: "string" },
  "worker-id": { type: "string" },
} as const;

type CommandName = "run" | "chat" | "serve" | "mcp";

const AGENT_COMMANDS: readonly CommandName[] = ["run", "chat", "mcp"];

/**
 * The commands each option is for. Parsing takes every option for every command, so one given to
 * a command that has no use for it (`run --port 9000`, `serve --max-cycles 3`) is refused here:
 * ignored, it would look as if it had worked.
 */
const OPTION_COMMANDS: {
  [Name in Exclude<keyof typeof OPTIONS, "help" | "version">]: readonly CommandName[];
} = {
  json: ["run"],
  verbose: ["run", "serve"],
  load: ["chat"],
  ...(Object.fromEntries(Object.keys(AGENT_OPTIONS).map((name) => [name, AGENT_COMMANDS])) as {
    [Name in keyof typeof AGENT_OPTIONS]: readonly CommandName[];
  }),
  model: [...AGENT_COMMANDS, "serve"],
  "base-url": [...AGENT_COMMANDS, "serve"],
  port: ["serve"],
  host: ["serve"],
  static: ["serve"],
  "database-url": ["serve"],
  "worker-id": ["serve"],
};

const USAGE: Record<CommandName, string> = {
  run: RUN_USAGE,
  chat: CHAT_USAGE,
  serve: SERVE_USAGE,
  mcp: MCP_USAGE,
};

interface RunCommand {
  kind: "run";
  prompt: string;
  json: boolean;
  agent: AgentOptions;
  /** The library's log lines, as JSON, to stderr. */
  verbose: boolean;
}

type Command = { kind: "help" } | { kind: "version" } | RunCommand | ChatCommand | ServeCommand | McpCommand;

/** The whole CLI, minus the process: returns the exit code (0 completed, 1 run failed or aborted, 2 bad usage). */
export async function main(argv: string[], io: CliIO): Promise<number> {
  try {
    const command = parseCommand(argv, io.env);
    switch (command.kind) {
      case "help":
        io.stdout.write(helpText());
        return EXIT_COMPLETED;
      case "version":
        io.stdout.write(`${version}\n`);
        return EXIT_COMPLETED;
      case "run":
        return await runPrompt(command, io);
      case "chat":
        return await runChat(command, io);
      case "serve":
        return await servePage(command, io);
      case "mcp":
        return await serveMcp(command, io);
    }
  } catch (error) {
    const usage = asUsageError(error);
    if (usage === undefined) throw error;
    io.stderr.write(`agent-core: ${usage.message}\n${usage.hint}\n`);
    return EXIT_USAGE;
  }
}

function parseCommand(argv: string[], env: CliIO["env"]): Command {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true });
  if (values.help) return { kind: "help" };
  if (values.version) return { kind: "version" };
  const [name, ...words] = positionals;
  if (name === undefined)
    throw new UsageError(
      "Missing command.",
      'Run "agent-core --help" for the commands: run, chat, serve and mcp.',
    );
  if (!isCommandName(name))
    throw new UsageError(`Unknown command "${name}"; the commands are "run", "chat", "serve" and "mcp".`);
  refuseOtherCommandsOptions(name, values);
  if (name === "serve") {
    if (words.length > 0)
      throw new UsageError(`serve takes no words, got "${words.join(" ")}".`, `Usage: ${SERVE_USAGE}`);
    return parseServeCommand(values, env);
  }
  if (name === "chat") return parseChatCommand(words, values, parseAgentOptions(values, env));
  if (name === "mcp") {
    if (words.length > 0)
      throw new UsageError(`mcp takes no words, got "${words.join(" ")}".`, `Usage: ${MCP_USAGE}`);
    return { kind: "mcp", agent: parseAgentOptions(values, env) };
  }
  // Unquoted words are one prompt: `agent-core run what is 2+2` asks "what is 2+2".
  const prompt = words.join(" ").trim();
  if (prompt === "") throw new UsageError("Missing prompt.", `Usage: ${RUN_USAGE}`);
  return {
    kind: "run",
    prompt,
    json: values.json ?? false,
    verbose: values.verbose ?? false,
    agent: parseAgentOptions(values, env),
  };
}

function isCommandName(name: string): name is CommandName {
  return Object.hasOwn(USAGE, name);
}

function refuseOtherCommandsOptions(
  name: CommandName,
  values: Partial<Record<keyof typeof OPTIONS, unknown>>,
): void {
  for (const [option, commands] of Object.entries(OPTION_COMMANDS)) {
    if (values[option as keyof typeof OPTIONS] === undefined || commands.includes(name)) continue;
    throw new UsageError(
      `--${option} is for ${listed(commands)}: ${name} ${whyNot(option, name)}.`,
      `Usage: ${USAGE[name]}`,
    );
  }
}

/** The reasons people most often need: the rest are simply not options of the command. */
function whyNot(option: string, name: CommandName): string {
  if (option === "load" && name !== "serve") return "starts a new conversation";
  if (option === "json" && name === "chat") return "shows the live view";
  return "does not take it";
}

function listed(commands: readonly CommandName[]): string {
  return commands.length === 1
    ? (commands[0] as string)
    : `${commands.slice(0, -1).join(", ")} and ${commands.at(-1)}`;
}

async function runPrompt(command: RunCommand, io: CliIO): Promise<number> {
  const { model, label, demo } = modelFromEnv(command.agent.modelEnv);
  const logger = command.verbose ? { logger: jsonLinesLogger(io.stderr) } : {};
  const agent = createCliAgent({ ...command.agent, config: { ...command.agent.config, ...logger } }, model);
  const render: EventRenderer = command.json
    ? createJsonRenderer(io.stdout)
    : createHumanRenderer(io.stdout, {
        color: io.stdout.isTTY === true && !io.env.NO_COLOR,
        model: label,
        demo,
        orchestrator: agent.orchestrator.name,
      });
  const run = agent.prompt(command.prompt, { signal: io.signal });
  for await (const event of run) render(event);
  const result = await run.result();
  // The NDJSON stream already holds the error event; this line is for the person watching stderr,
  // shown as text as the live view shows it: the message comes from the server, and may hold escapes.
  if (command.json && result.error !== undefined)
    io.stderr.write(`agent-core: ${printable(result.error.message)}\n`);
  return result.stopReason === "completed" ? EXIT_COMPLETED : EXIT_FAILED;
}

/** The errors that mean "you asked for something that does not exist", as opposed to bugs. */
function asUsageError(error: unknown): UsageError | undefined {
  if (error instanceof UsageError) return error;
  if (error instanceof UnknownOrchestratorError)
    return new UsageError(
      `Unknown orchestrator "${error.orchestrator}". Registered orchestrators: ${orchestratorNames()}.`,
      "Pass one of them to --orchestrator, or leave the option out for the default.",
    );
  if (isParseArgsError(error)) return fromParseArgsError(error);
  return undefined;
}

function isParseArgsError(error: unknown): error is TypeError & { code: string } {
  return (
    error instanceof TypeError && String((error as { code?: unknown }).code).startsWith("ERR_PARSE_ARGS")
  );
}

/**
 * Node's messages for these are paragraphs (about positionals, or three lines for a value starting
 * with "-"); a usage error is one line and a hint. An unknown option is most often just mistyped.
 */
function fromParseArgsError(error: TypeError & { code: string }): UsageError {
  const ambiguous = /^Option '([^']+)' argument is ambiguous/.exec(error.message)?.[1];
  if (ambiguous !== undefined)
    return new UsageError(
      `${ambiguous} needs a value, and the word after it starts with "-".`,
      `Run "agent-core --help" for its values; one that starts with "-" goes after "=": ${ambiguous}=-…`,
    );
  const option = /^Unknown option '([^']+)'/.exec(error.message)?.[1];
  if (error.code !== "ERR_PARSE_ARGS_UNKNOWN_OPTION" || option === undefined)
    return new UsageError(error.message);
  return new UsageError(
    `Unknown option "${option}".`,
    'Run "agent-core --help" for the options; a prompt starting with "-" goes after "--".',
  );
}

function orchestratorNames(): string {
  const registry = rootContainer.resolve(ORCHESTRATOR_REGISTRY);
  const names = registry.names().map((name) => (name === registry.defaultName ? `${name} (default)` : name));
  return names.length > 0 ? names.join(", ") : "none";
}

function helpText(): string {
  return `agent-core ${version}: run an LLM agent with tools from the terminal

Usage:
  ${RUN_USAGE}
  ${CHAT_USAGE}
  ${SERVE_USAGE}
  ${MCP_USAGE}
  agent-core --help | --version

run: one prompt, its live view (or --json), and the exit code says how it ended.

chat: a conversation; the history carries over from prompt to prompt, and --load FILE starts
from a saved one (docs/cli.md). At a terminal:
${indent(CHAT_KEYS_HELP)}Without a terminal (stdin a pipe or a file), each line is a prompt or a command, taken when
the run before it has ended; the exit code is 1 if a run did not complete or a command failed.

serve: the agent over HTTP with a demo page (examples/http-browser) where it uses page tools that
run in your browser; open the address it prints. --port (default 8787), --host (default
127.0.0.1), --static (the page's folder), --model and --base-url as for run. With --database-url postgres://… runs are durable
(docs/durable-runs.md): each is a workflow in that database that survives a restart, and several
serve processes on one database share the runs; give them AGENT_CORE_HOOK_SECRET (32+ characters,
the same in each) and each its own --worker-id.

mcp: the agent as an MCP server on stdin and stdout, for MCP clients (desktop apps, editors): one
tool, ask_agent({ prompt }), answered by a new agent with the tools below, shaped by the options
below as for run. In a client's configuration:
  { "command": "agent-core", "args": ["mcp"], "env": { "OPENAI_API_KEY": "…" } }

Options of run, chat and mcp:
  --json               (run) print every event as one NDJSON line instead of the live view
  --verbose            (run, serve) write the library's log lines (JSON, each with the runId) to stderr
${agentOptionsHelp(orchestratorNames())}  -h, --help           show this help
  -v, --version        print the version

Tools: calculator (arithmetic), get_current_time (date and time).

Model, from the environment (--model and --base-url override the last two):
  OPENAI_API_KEY       use a real model through any OpenAI-compatible chat API; without it an offline
                       demo model answers (arithmetic, time and recall questions only, marked [demo])
  OPENAI_BASE_URL      the API's base URL, default ${DEFAULT_BASE_URL}; works with OpenAI,
                       Ollama (http://localhost:11434/v1), llama.cpp server (http://localhost:8080/v1),
                       vLLM (http://localhost:8000/v1) and other OpenAI-compatible servers
  AGENT_CORE_MODEL     the model name, default ${DEFAULT_MODEL}
  NO_COLOR             set to turn colours off

Examples:
  agent-core run "What is 15*3 and 10+5?"
  agent-core run --json "What is 2^10?" | jq -c 'select(.type == "tool_result")'
  OPENAI_API_KEY=ollama OPENAI_BASE_URL=http://localhost:11434/v1 AGENT_CORE_MODEL=llama3.2 \\
    agent-core run "What time is it in Tokyo?"
  OPENAI_API_KEY=sk-… agent-core chat --model gpt-4o --parallel-tools --tool-ms 10000 --load chat.json
  printf 'What is 6*7?\\nWhat did I ask before?\\n/save chat.json\\n' | agent-core chat

A prompt starting with "-" goes after "--": agent-core run -- "-5+3?"
Ctrl-C aborts the run. Exit codes of run: 0 completed, 1 the run failed or was aborted, 2 bad usage.
`;
}

function indent(text: string): string {
  return text.replace(/^(?=.)/gm, "  ");
}
