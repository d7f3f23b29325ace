import { errorMessage } from "@agent-core/core";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage, RequestId } from "@modelcontextprotocol/sdk/types.js";
import {
  answeredIdOf,
  messagesReadFrom,
  notResumedAnswer,
  parsedOrUndefined,
  postUnansweredAnswer,
  streamEndedAnswer,
} from "./broken-answers.js";
import { reportBreak } from "./broken-stream-fetch.js";

/**
 * How many times the transport tries the GET that resumes a stream before it gives up: the
 * `maxRetries` of its reconnection options, which `connectMcp` sets to it.
 */
export const RESUME_TRIES = 2;

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
 *
 * A stream that ended without the answers of its requests after an event id leaves them to the GET
 * that resumes it. When the server refuses that GET (405, after which the SDK tries no more; any
 * other failure `RESUME_TRIES` times), or the stream it resumes with ends or breaks off without
 * them and with no event id (the SDK then opens a GET with no `Last-Event-ID`, on which a server
 * sends no answers), they cannot come: each request is given an error answer saying why, through
 * `answer` (the transport's `onmessage`), where it would wait for its timeout.
 */
export function brokenAnswerFetch(
  answer: (message: JSONRPCMessage) => void,
  base: FetchLike = fetch,
): FetchLike {
  const resumptions = new Resumptions(answer);
  return async (url, init) => {
    const method = init?.method ?? "GET";
    if (method === "POST") resumptions.cancelled(init?.body);
    const resumedFrom = method === "GET" ? new Headers(init?.headers).get("last-event-id") : null;
    let response: Response;
    try {
      response = await base(url, init);
    } catch (error) {
      if (resumedFrom !== null && !init?.signal?.aborted)
        resumptions.refused(resumedFrom, `failed: ${errorMessage(error)}`, { final: false });
      throw error;
    }
    if (resumedFrom !== null && !response.ok)
      resumptions.refused(resumedFrom, `answered ${response.status} ${response.statusText}`.trimEnd(), {
        final: response.status === 405,
      });
    // The requests this POST carried: what it is answered is theirs, named or not.
    const posted = method === "POST" && response.ok ? requestIdsIn(init?.body) : [];
    // 202 answers a POST of notifications or answers only: a request's answer comes on the POST's
    // own answer (or the stream that resumes it), never later on another.
    if (response.status === 202) for (const id of posted) answer(postUnansweredAnswer(id, "202 Accepted"));
    if ((method !== "POST" && method !== "GET") || !response.ok || response.body === null) return response;
    // The requests whose answers are to come on this GET, which resumes their stream.
    const awaited = resumedFrom === null ? [] : resumptions.resumed(resumedFrom);
    const type = response.headers.get("content-type") ?? "";
    // The SDK reads a GET's answer as events whatever its type.
    if (type.startsWith("text/event-stream") || awaited.length > 0) {
      const seen: EventsSeen = { unanswered: new Set([...posted, ...awaited]), lastEventId: undefined };
      // At the stream's end, its unanswered requests wait for the GET that resumes it from its
      // last event id; with none, they fail (the stream's last text, after a POST's that ended;
      // one that broke off is brokenStreamFetch's, which closes the connection).
      const ended = (how: "ended" | "broke off"): string => {
        if (seen.unanswered.size === 0) return "";
        if (seen.lastEventId !== undefined) resumptions.awaiting(seen.lastEventId, seen.unanswered);
        else if (method === "POST" && how === "ended")
          return [...seen.unanswered]
            .map((id) => `data: ${JSON.stringify(streamEndedAnswer(id))}\n\n`)
            .join("");
        else if (method === "GET")
          resumptions.fail(
            seen.unanswered,
            `the stream that resumed it ${how} without it, and gave no event id to resume it from`,
          );
        return "";
      };
      const events = response.body
        .pipeThrough(new TextDecoderStream())
        .pipeThrough(eventsWithErrorAnswers(posted, seen, () => ended("ended")))
        .pipeThrough(new TextEncoderStream());
      return withBody(
        response,
        reportBreak(events, () => void ended("broke off"), init?.signal),
      );
    }
    if (method === "POST" && type.startsWith("application/json"))
      return withBody(response, jsonWithErrorAnswers(await response.text(), posted));
    return response;
  };
}

/**
 * The requests whose answers are to come on a stream the transport resumes (a GET with
 * `Last-Event-ID`), by the event id it resumes from, until it does.
 */
class Resumptions {
  readonly #answer: (message: JSONRPCMessage) => void;
  /** By event id: the requests waiting, and how many GETs resuming from it failed so far. */
  readonly #streams = new Map<string, { requests: Set<RequestId>; failures: number }>();

  constructor(answer: (message: JSONRPCMessage) => void) {
    this.#answer = answer;
  }

  /** `requests` are to be answered on the stream the transport resumes from `eventId`. */
  awaiting(eventId: string, requests: Iterable<RequestId>): void {
    const stream = this.#streams.get(eventId) ?? { requests: new Set(), failures: 0 };
    for (const id of requests) stream.requests.add(id);
    this.#streams.set(eventId, stream);
  }

  /** The requests whose answers are to come on the stream resumed from `eventId`, now read. */
  resumed(eventId: string): RequestId[] {
    const stream = this.#streams.get(eventId);
    this.#streams.delete(eventId);
    return [...(stream?.requests ?? [])];
  }

  /**
   * A GET resuming from `eventId` failed (`why`: "answered 500 …", "failed: …"): its requests fail once the transport tries no
   * more, after a `final` refusal or `RESUME_TRIES` failures.
   */
  refused(eventId: string, why: string, { final }: { final: boolean }): void {
    const stream = this.#streams.get(eventId);
    if (stream === undefined) return;
    stream.failures += 1;
    if (!final && stream.failures < RESUME_TRIES) return;
    this.#streams.delete(eventId);
    this.fail(
      stream.requests,
      final
        ? `its GET with Last-Event-ID was ${why}`
        : `its GET with Last-Event-ID was tried ${stream.failures} times, the last ${why}`,
    );
  }

  fail(requests: Iterable<RequestId>, reason: string): void {
    for (const id of requests) this.#answer(notResumedAnswer(id, reason));
  }

  /** A POST's `notifications/cancelled` ends the wait of the request it names: none answers it now. */
  cancelled(body: unknown): void {
    const message = typeof body === "string" ? parsedOrUndefined(body) : undefined;
    if (typeof message !== "object" || message === null) return;
    const { method, params } = message as { method?: unknown; params?: { requestId?: RequestId } };
    if (method !== "notifications/cancelled" || params?.requestId === undefined) return;
    for (const stream of this.#streams.values()) stream.requests.delete(params.requestId);
  }
}

/** What the SDK has read of an event stream: the requests it expects answers to that none answered yet, the last event id. */
interface EventsSeen {
  unanswered: Set<RequestId>;
  lastEventId: string | undefined;
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

/**
 * A JSON answer (one message, or a batch) as `messagesReadFrom` reads each of its messages, with
 * an error answer to each request of the POST it does not answer (its answer cannot come later).
 */
function jsonWithErrorAnswers(text: string, posted: readonly RequestId[]): string {
  const value = parsedOrUndefined(text);
  if (value === undefined) return text; // the SDK says it is no JSON
  const messages: unknown[] = Array.isArray(value) ? value : [value];
  const read = messages.flatMap((message) => messagesReadFrom(message, () => posted));
  // The SDK matches an answer's id to its request's as a number ("1" answers 1).
  const answered = new Set(read.map((message) => String(answeredIdOf(message))));
  for (const id of posted)
    if (!answered.has(String(id))) read.push(postUnansweredAnswer(id, "its JSON answers another request"));
  if (read.length === messages.length && read.every((message, i) => message === messages[i])) return text;
  return JSON.stringify(Array.isArray(value) || read.length > 1 ? read : read[0]);
}

/**
 * Server-sent events with the data of each read as `messagesReadFrom` reads it (an event for each
 * message it gives); everything else as it came (line breaks as `\n`: `\r\n` and `\r` mean the
 * same to the SDK's parser). An event goes on once its blank line came. `seen` is kept up to date,
 * and what `ended()` gives is the stream's last text.
 */
function eventsWithErrorAnswers(
  posted: readonly RequestId[],
  seen: EventsSeen,
  ended: () => string,
): TransformStream<string, string> {
  /** The current line so far. */
  let line = "";
  /** The last chunk ended with `\r`: a `\n` next belongs to that line break. */
  let afterCR = false;
  /** The current event's lines. */
  let event: string[] = [];
  return new TransformStream<string, string>({
    transform(chunk, controller) {
      let text = chunk;
      if (afterCR && text.startsWith("\n")) text = text.slice(1);
      afterCR = text.endsWith("\r");
      // Only the new text is split: splitting the line so far again with each chunk would read a
      // long answer's line once per chunk (a 40 MB one, in 16 KiB chunks, for minutes).
      const lines = text.split(/\r\n|\r|\n/);
      lines[0] = line + lines[0];
      line = lines.pop() ?? "";
      let out = "";
      for (const complete of lines) {
        if (complete !== "") {
          event.push(complete);
          continue;
        }
        // The SDK reads the messages of message events only: an answer in another is none.
        const isMessage = isMessageEvent(event);
        for (const read of eventsReadFrom(event, posted)) {
          out += `${read.lines.join("\n")}${read.lines.length > 0 ? "\n" : ""}\n`;
          if (isMessage) seen.unanswered.delete(answeredIdOf(read.message) as RequestId);
        }
        seen.lastEventId = eventIdOf(event) ?? seen.lastEventId;
        event = [];
      }
      if (out !== "") controller.enqueue(out);
    },
    // What is left is an event with no blank line after it, which the SDK's parser drops.
    flush(controller) {
      const last = ended();
      if (last !== "") controller.enqueue(last);
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

/**
 * The id the SDK's parser gives the event, which it resumes the stream from: the value of its last
 * `id:` line, when it has data (an event without is not given) and the value is not empty and has
 * no NUL (which the parser ignores).
 */
function eventIdOf(event: string[]): string | undefined {
  if (!event.some(isDataLine)) return undefined;
  const ids = event
    .filter((line) => line === "id" || line.startsWith("id:"))
    .map((line) => line.slice(3).replace(/^ /, ""))
    .filter((id) => !id.includes("\0"));
  const id = ids.at(-1);
  return id === "" ? undefined : id;
}

/** Whether the SDK's parser gives the event as a message event: its last `event:` line, if any, names none or `message`. */
function isMessageEvent(event: string[]): boolean {
  const type = event
    .filter((line) => line === "event" || line.startsWith("event:"))
    .map((line) => line.slice(6).replace(/^ /, ""))
    .at(-1);
  return type === undefined || type === "" || type === "message";
}
