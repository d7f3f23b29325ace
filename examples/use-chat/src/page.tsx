import { useChat } from "@ai-sdk/react";
import {
  DefaultChatTransport,
  isToolUIPart,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
  type UIMessage,
} from "ai";
import { type FormEvent, useState } from "react";
import { createRoot } from "react-dom/client";

// A plain useChat page: nothing in it knows of agent-core. The server at /api/chat is agent-core's
// createUseChatHandler.

type ToolPart = Extract<UIMessage["parts"][number], { toolCallId: string }>;

/** The client tool: where the user is, from the browser's time zone (Europe/Oslo: Oslo). */
function locate(): { city: string; timeZone: string } {
  const { timeZone } = Intl.DateTimeFormat().resolvedOptions();
  return { city: (timeZone.split("/").at(-1) ?? timeZone).replaceAll("_", " "), timeZone };
}

function Chat() {
  const [input, setInput] = useState("");
  const { messages, sendMessage, addToolOutput, addToolApprovalResponse, status, error } = useChat({
    transport: new DefaultChatTransport({ api: "/api/chat" }),
    // The chat posts again once the page answered every tool call, or every approval request.
    sendAutomaticallyWhen: (chat) =>
      lastAssistantMessageIsCompleteWithToolCalls(chat) ||
      lastAssistantMessageIsCompleteWithApprovalResponses(chat),
    onToolCall({ toolCall }) {
      if (toolCall.dynamic || toolCall.toolName !== "get_location") return;
      void addToolOutput({ tool: "get_location", toolCallId: toolCall.toolCallId, output: locate() });
    },
  });

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (input.trim() === "") return;
    void sendMessage({ text: input });
    setInput("");
  };

  const tool = (part: ToolPart) => {
    const input = part.input as Record<string, unknown> | undefined;
    if (part.type === "tool-book_table" && part.state === "approval-requested")
      return (
        <div className="tool approval" key={part.toolCallId}>
          Book a table for {String(input?.people)} in {String(input?.city)}?{" "}
          <button
            type="button"
            onClick={() => addToolApprovalResponse({ id: part.approval.id, approved: true })}
          >
            Approve
          </button>
          <button
            type="button"
            onClick={() =>
              addToolApprovalResponse({ id: part.approval.id, approved: false, reason: "not now" })
            }
          >
            Deny
          </button>
        </div>
      );
    const name = part.type.slice("tool-".length);
    const outcome =
      part.state === "output-available"
        ? `✔ ${JSON.stringify(part.output)}`
        : part.state === "output-error"
          ? `✘ ${part.errorText}`
          : part.state === "output-denied"
            ? "✘ denied"
            : "…";
    return (
      <div className="tool" key={part.toolCallId} data-tool={name} data-state={part.state}>
        {name} {outcome}
      </div>
    );
  };

  return (
    <>
      <div id="messages">
        {messages.map((message) => (
          <div key={message.id} className={`message ${message.role}`} data-role={message.role}>
            {message.parts.map((part, index) =>
              isToolUIPart(part) ? (
                tool(part as ToolPart)
              ) : part.type === "text" ? (
                // biome-ignore lint/suspicious/noArrayIndexKey: a message's parts never reorder
                <span key={index}>{part.text}</span>
              ) : null,
            )}
          </div>
        ))}
      </div>
      <p id="status">{status}</p>
      {error === undefined ? null : <p id="error">{error.message}</p>}
      <form onSubmit={submit}>
        <input id="prompt" value={input} onChange={(event) => setInput(event.target.value)} />
        <button id="send" type="submit" disabled={status === "streaming" || status === "submitted"}>
          Send
        </button>
      </form>
    </>
  );
}

createRoot(document.getElementById("root") as HTMLElement).render(<Chat />);
