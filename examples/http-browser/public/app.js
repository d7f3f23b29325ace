// The page side of the demo: a plain ES module, no build step. It talks to the agent through
// @agent-core/client (served by `agent-core serve` under /client/) and runs the page tools here.
import { AgentClient } from "/client/index.js";

const doc = document.querySelector("#doc");
const transcript = document.querySelector("#transcript");
const form = document.querySelector("#prompt-form");
const input = document.querySelector("#prompt");
const steerButton = document.querySelector("#steer");
const cancelButton = document.querySelector("#cancel");
const status = document.querySelector("#status");
const conversationId = crypto.randomUUID();

/** An element of the document area only: the agent never touches the chat panel. */
function elementsOf(selector) {
  let matches;
  try {
    matches = [...document.querySelectorAll(selector)];
  } catch {
    throw new Error(`"${selector}" is not a valid CSS selector`);
  }
  const inside = matches.filter((element) => doc.contains(element));
  if (inside.length === 0) throw new Error(`no element of the page matches "${selector}"`);
  return inside;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Shows the question with Yes/No and waits for the user's click (or the run's end). */
function askUser(question, signal) {
  const box = document.querySelector("#confirm");
  document.querySelector("#confirm-question").textContent = question;
  box.hidden = false;
  return new Promise((resolve, reject) => {
    const answer = (confirmed) => () => {
      box.hidden = true;
      resolve({ confirmed });
    };
    document.querySelector("#confirm-yes").onclick = answer(true);
    document.querySelector("#confirm-no").onclick = answer(false);
    signal.addEventListener("abort", () => {
      box.hidden = true;
      reject(signal.reason);
    });
  });
}

const pageTools = {
  read_page: ({ selector }) => elementsOf(selector)[0].textContent.replace(/\s+/g, " ").trim(),
  highlight: async ({ selector }) => {
    const elements = elementsOf(selector);
    for (const element of elements) element.classList.add("highlight");
    // Long enough to see, and to steer the agent while it works.
    await sleep(1000);
    return `highlighted ${elements.length} element(s)`;
  },
  edit_element: ({ selector, text }) => {
    elementsOf(selector)[0].textContent = text;
    return "done";
  },
  confirm: ({ question }, { signal }) => askUser(question, signal),
};

const client = new AgentClient({ baseUrl: `${location.origin}/api`, tools: pageTools });

function line(text, className) {
  const item = document.createElement("li");
  item.textContent = text;
  if (className) item.className = className;
  transcript.append(item);
  transcript.scrollTop = transcript.scrollHeight;
  return item;
}

let run;

/** Where a call runs: here, on the server, or nowhere (a page tool the run skipped or refused). */
function where(event) {
  if (event.execution === "client") return " in your browser";
  return Object.hasOwn(pageTools, event.toolName) ? " (not run)" : " on the server";
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const prompt = input.value.trim();
  if (prompt === "") return;
  input.value = "";
  line(prompt, "user");
  // A new prompt cancels the one in flight (the client does it before it starts this one).
  const current = client.start(prompt, { conversationId });
  run = current;
  status.textContent = "running";
  steerButton.disabled = false;
  cancelButton.disabled = false;
  let answer;
  try {
    for await (const event of current) {
      switch (event.type) {
        case "text_delta":
          answer ??= line("", "answer");
          answer.textContent += event.text;
          break;
        case "tool_call":
          line(
            `→ ${event.toolName}(${JSON.stringify(event.args)})${where(event)}`,
            `tool${event.execution === "client" ? " client" : ""}`,
          );
          answer = undefined;
          break;
        case "tool_result":
          line(`← ${event.toolName}: ${event.status}`, "tool");
          break;
        case "steering_applied":
          line(`steered: ${event.messages.map((message) => message.content).join(" ")}`, "steer");
          answer = undefined;
          break;
        case "error":
        case "client_error":
          line(`${event.code}: ${event.message}`, "problem");
          break;
        case "agent_end":
          status.textContent = event.stopReason;
          break;
      }
    }
  } catch (error) {
    // A run that failed (the server refused it, the connection could not be re-attached): the
    // iteration throws the client's ClientError.
    line(`${error.code}: ${error.message}`, "problem");
    if (run === current) status.textContent = "failed";
  }
  if (run === current) {
    steerButton.disabled = true;
    cancelButton.disabled = true;
    // A cancelled run's loop ends quietly, without agent_end.
    if (status.textContent === "running") status.textContent = "cancelled";
  }
});

steerButton.addEventListener("click", async () => {
  const message = input.value.trim();
  if (message === "" || run === undefined) return;
  input.value = "";
  line(`(steer) ${message}`, "user steer");
  try {
    await run.steer(message);
  } catch (error) {
    // Refused (the run ended, or has not started yet) or unanswered: a ClientError says which.
    line(`${error.code}: ${error.message}`, "problem");
  }
});

cancelButton.addEventListener("click", () => run?.cancel());
