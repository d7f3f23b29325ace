import { HttpError } from "./http-error.js";
import type { Principal } from "./server-options.js";

/**
 * Asks the app who is asking; nobody (`undefined`, `null`, a throw, or no user id) answers 401. A
 * principal whose `documents` is not a list is the app's mistake: a 500, never a guess at what it
 * meant.
 */
export async function authorizedPrincipal(
  authorize: (request: Request) => Principal | undefined | Promise<Principal | undefined>,
  request: Request,
): Promise<Principal> {
  let principal: Principal | undefined;
  try {
    principal = await authorize(request);
  } catch {
    principal = undefined;
  }
  // `?.`: a JavaScript app's "nobody" is often null, whose userId would throw (a 500, not a 401).
  if (typeof principal?.userId !== "string" || principal.userId === "")
    throw new HttpError(401, "unauthorized", "Sign in first.");
  // A string's `includes` matches any part of it ("doc-12" would let "doc-1" in), and `null` has no
  // `includes` at all: refused here, before any document is checked against it.
  if (principal.documents !== undefined && !Array.isArray(principal.documents))
    throw new TypeError(
      `authorize returned documents that is not a list of document ids: ${JSON.stringify(principal.documents)}.`,
    );
  return principal;
}

/** Refuses a document the user may not touch: 403 `document-forbidden`, or `refusal` when given. */
export function mayTouch(principal: Principal, documentId: string, refusal?: HttpError): void {
  if (principal.documents === undefined || principal.documents.includes(documentId)) return;
  throw refusal ?? new HttpError(403, "document-forbidden", `You may not use document "${documentId}".`);
}
