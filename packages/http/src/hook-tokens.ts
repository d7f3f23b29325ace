import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { canonicalJson, InvalidConfigError } from "@agent-core/core";

/** What a hook token says: which call of which run, for whom, until when. */
export interface HookClaims {
  /** The key that signed it. */
  kid: string;
  runId: string;
  toolCallId: string;
  toolName: string;
  userId: string;
  documentId?: string;
  /** SHA-256 of the call's arguments (canonical JSON), base64url. */
  args: string;
  /** Expiry, Unix time in ms. */
  exp: number;
  nonce: string;
}

/** A signing key; `id` goes into every token it signs, so keys can rotate. */
export interface HookKey {
  id: string;
  secret: string;
}

/**
 * Signs and verifies hook tokens: `base64url(claims JSON) "." base64url(HMAC-SHA256)`. The first
 * key signs; every key verifies, so a new key can go first while tokens signed by the old one are
 * still honoured. A signature only proves the server issued the token: single use is the ledger's.
 */
export class HookTokens {
  readonly #keys: Map<string, Buffer>;
  readonly #signing: HookKey;

  constructor(secret: string | readonly HookKey[]) {
    if (typeof secret !== "string" && !Array.isArray(secret))
      throw new InvalidConfigError(
        `hookSecret must be a secret of 32+ characters or an array of { id, secret } keys, got ${
          secret === null || typeof secret !== "object" ? String(secret) : "an object"
        }.`,
      );
    const keys = typeof secret === "string" ? [{ id: "k1", secret }] : secret;
    if (keys.length === 0) throw new InvalidConfigError("hookSecret: give at least one key.");
    for (const key of keys)
      if (typeof key.secret !== "string" || key.secret.length < 32)
        throw new InvalidConfigError(
          `hookSecret${typeof secret === "string" ? "" : ` "${key.id}"`}: use at least 32 characters of random text.`,
        );
    this.#signing = keys[0] as HookKey;
    this.#keys = new Map(keys.map((key) => [key.id, Buffer.from(key.secret, "utf8")]));
  }

  /**
   * The nonce is derived from the run and the call alone: every token for one call, whichever
   * server process signs it, however often and with whichever key goes first, has the same one,
   * so the ledger allows one result per call. It needs no key: the claims are readable anyway, and
   * only a signed token reaches the ledger.
   */
  sign(claims: Omit<HookClaims, "kid" | "nonce">): string {
    const kid = this.#signing.id;
    const nonce = createHash("sha256")
      .update(`nonce\u0000${claims.runId}\u0000${claims.toolCallId}`)
      .digest("base64url")
      .slice(0, 22);
    const full: HookClaims = { ...claims, kid, nonce };
    const body = Buffer.from(JSON.stringify(full), "utf8").toString("base64url");
    return `${body}.${this.#mac(this.#signing.id, body)}`;
  }

  /** The claims of a token this server signed, or undefined for anything else. */
  verify(token: string): HookClaims | undefined {
    const dot = token.indexOf(".");
    if (dot <= 0 || token.length > 4096) return undefined;
    const body = token.slice(0, dot);
    let claims: HookClaims;
    try {
      claims = JSON.parse(Buffer.from(body, "base64url").toString("utf8"));
    } catch {
      return undefined;
    }
    if (typeof claims !== "object" || claims === null || typeof claims.kid !== "string") return undefined;
    const expected = this.#mac(claims.kid, body);
    if (expected === undefined) return undefined;
    const given = Buffer.from(token.slice(dot + 1), "utf8");
    const wanted = Buffer.from(expected, "utf8");
    if (given.length !== wanted.length || !timingSafeEqual(given, wanted)) return undefined;
    return claims;
  }

  #mac(kid: string, body: string): string | undefined {
    const key = this.#keys.get(kid);
    return key && createHmac("sha256", key).update(body).digest("base64url");
  }
}

/** SHA-256 of a value's canonical JSON, base64url: the same for `{a,b}` and `{b,a}`. */
export function digest(value: unknown): string {
  return createHash("sha256").update(canonicalJson(value)).digest("base64url");
}
