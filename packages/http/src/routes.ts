import { HttpError } from "./http-error.js";

// The server's routes: which method a path takes, and the answers for a path or method it does not serve.

/** What follows a run id in the path of a route that takes a POST. */
const RUN_ACTIONS = new Set(["tool-results", "steer", "follow-up", "cancel"]);

/**
 * The method of the route a path names, or undefined when it names none: a 405's `Allow` then
 * only ever names a method that is served there.
 */
export function routeMethod(parts: readonly string[]): "GET" | "POST" | undefined {
  if (parts[0] !== "runs") return undefined;
  if (parts.length === 1) return "POST";
  if (parts.length !== 3) return undefined;
  if (parts[2] === "events") return "GET";
  return RUN_ACTIONS.has(parts[2] as string) ? "POST" : undefined;
}

export function notFound(): HttpError {
  return new HttpError(404, "not-found", "No such route.");
}

export function notAllowed(allow: string): HttpError {
  return new HttpError(405, "method-not-allowed", `Use ${allow} here.`, { headers: { allow } });
}
