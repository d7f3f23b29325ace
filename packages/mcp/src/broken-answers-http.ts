import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { RequestId } from "@modelcontextprotocol/sdk/types.js";
import { answeredIdOf, messagesReadFrom, parsedOrUndefined, streamEndedAnswer } from "./broken-answers.js";

/**
 * `fetch` for the Streamable HTTP transport that makes an answer that breaks JSON-RPC's schema
 * (`"result": null`) an error answer to the request it names, and an error answer that names no
 * request (`"id": null`) one to the request the POST carried, in a POST's JSON answer or its event
 * stream, as `readBrokenAnswers` does over stdio. The SDK's transport drops such an event (the call
 * waits for its timeout), and fails a JSON answer with zod's union error, which names no field.
 *
 * A GET's event stream is read so too: a server sends its own requests and notifications on it,
 * but also the answers of a POST's stream that the client resumes on it (`Last-Event-ID`), after
 * the stream broke off or the server closed it early. A GET carries no request, so an error
 * answer on it that names none stays as it is (the SDK drops it): a server that could not read
 * a POST says so in the POST's own answer.
 */
export function brokenAnswerFetch(base: FetchLike = fetch): FetchLike {
  return async (url, init) => {
    const response = await base(url, init);
    const method = init?.method ?? "GET";
    if ((method !== "POST" && method !== "GET") || !response.ok || response.body === null) return response;
    // The requests this POST carried: what it is answered is theirs, named or not.
    const posted = method === "POST" ? requestIdsIn(init?.body) : [];
    const type = response.headers.get("content-type") ?? "";
    if (type.startsWith("text/event-stream"))
      return withBody(
        response,
        response.body
          .pipeThrough(new TextDecoderStream())
          .pipeThrough(eventsWithErrorAnswers(posted))
          .pipeThrough(new TextEncoderStream()),
      );
    if (method === "POST" && type.startsWith("application/json"))
      return withBody(response, jsonWithErrorAnswers(await response.text(), posted));
    return response;
  };
}

/** The ids of the requests in a POST's body (the SDK's client sends one message as a JSON string). */
function requestIdsIn(body: unknown): RequestId[] {
  const value = typeof body === "string" ? parsedOrUndefined(body) : undefined;
  const messages: unknown[] = Array.isArray(value) ? value : [value];
  return messages.flatMap((message) => {
    if (typeof message !== "object" || message === null || !("method" in message)) return [];
    const { id } = message as { id?: unknown };
    return typeof id === "string" || typeof id === "number" ? [id] : [];
  });
}

function withBody(response: Response, body: BodyInit): Response {
  const headers = new Headers(response.headers);
  headers.delete("content-length"); // the body may have been rewritten
  return new Response(body, { status: response.status, statusText: response.statusText, headers });
}

/** A JSON answer (one message, or a batch) as `messagesReadFrom` reads each of its messages. */
function jsonWithErrorAnswers(text: string, posted: readonly RequestId[]): string {
  const value = parsedOrUndefined(text);
  if (value === undefined) return text; // the SDK says it is no JSON
  const messages: unknown[] = Array.isArray(value) ? value : [value];
  const read = messages.flatMap((message) => messagesReadFrom(message, () => posted));
  if (read.length === messages.length && read.every((message, i) => message === messages[i])) return text;
  return JSON.stringify(Array.isArray(value) || read.length > 1 ? read : read[0]);
}

/**
 * Server-sent events with the data of each read as `messagesReadFrom` reads it (an event for each
 * message it gives); everything else as it came (line breaks as `\n`: `\r\n` and `\r` mean the
 * same to the SDK's parser). An event goes on once its blank line came.
 *
 * A POST's stream that ends before the answers of its requests, and gave no event id, ends with an
 * error answer to each: the SDK resumes a stream (a GET with `Last-Event-ID`) from an event id
 * only, and a server sends answers on no other stream, so they could not come and the requests
 * would wait for their timeout (`callTimeoutMs`).
 */
function eventsWithErrorAnswers(posted: readonly RequestId[]): TransformStream<string, string> {
  /** The current line so far. */
  let line = "";
  /** The last chunk ended with `\r`: a `\n` next belongs to that line break. */
  let afterCR = false;
  /** The current event's lines. */
  let event: string[] = [];
  /** The posted requests no event has answered yet. */
  const unanswered = new Set(posted);
  /** An event gave an id, which the SDK resumes the stream from when it ends. */
  let resumable = false;
  return new TransformStream<string, string>({
    transform(chunk, controller) {
      let text = chunk;
      if (afterCR && text.startsWith("\n")) text = text.slice(1);
      afterCR = text.endsWith("\r");
      const lines = (line + text).split(/\r\n|\r|\n/);
      line = lines.pop() ?? "";
      let out = "";
      for (const complete of lines) {
        if (complete !== "") {
          event.push(complete);
          continue;
        }
        for (const read of eventsReadFrom(event, posted)) {
          out += `${read.lines.join("\n")}${read.lines.length > 0 ? "\n" : ""}\n`;
          unanswered.delete(answeredIdOf(read.message) as RequestId);
        }
        resumable ||= givesEventId(event);
        event = [];
      }
      if (out !== "") controller.enqueue(out);
    },
    // What is left is an event with no blank line after it, which the SDK's parser drops.
    flush(controller) {
      if (resumable) return;
      for (const id of unanswered) controller.enqueue(`data: ${JSON.stringify(streamEndedAnswer(id))}\n\n`);
    },
  });
}

/**
 * An event's lines, as they are when its data is a message; else, when `messagesReadFrom` reads
 * its data as other messages, an event of the same lines for each, its `data:` lines replaced.
 * Each with the message of its data.
 */
function eventsReadFrom(
  event: string[],
  posted: readonly RequestId[],
): { lines: string[]; message: unknown }[] {
  const data = event.filter(isDataLine).map((line) => line.slice(5).replace(/^ /, ""));
  if (data.length === 0) return [{ lines: event, message: undefined }];
  const message = parsedOrUndefined(data.join("\n"));
  const read = messagesReadFrom(message, () => posted);
  if (read.length === 1 && read[0] === message) return [{ lines: event, message }];
  const rest = event.filter((line) => !isDataLine(line));
  return read.map((answer) => ({ lines: [...rest, `data: ${JSON.stringify(answer)}`], message: answer }));
}

function isDataLine(line: string): boolean {
  return line === "data" || line.startsWith("data:");
}

/** Whether the SDK's parser gives the event with an id: it has data, and an `id:` line with a value. */
function givesEventId(event: string[]): boolean {
  return event.some(isDataLine) && event.some((line) => /^id: ?./.test(line));
}
