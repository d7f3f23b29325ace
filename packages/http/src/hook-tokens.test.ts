import { describe, expect, it } from "vitest";
import { digest, HookTokens } from "./hook-tokens.js";

const claims = {
  runId: "r1",
  toolCallId: "c1",
  toolName: "read_page",
  userId: "ada",
  args: digest({ selector: "h1" }),
  exp: 1_800_000_000_000,
};
const secret = "k".repeat(32);

describe("HookTokens", () => {
  it("verifies what it signed, with one nonce per call whoever signs it", () => {
    const tokens = new HookTokens(secret);
    const a = tokens.sign(claims);
    expect(tokens.verify(a)).toEqual({ ...claims, kid: "k1", nonce: expect.stringMatching(/^[\w-]{22}$/) });
    // Signed again (later, by another process with the same key): the same call, the same nonce.
    const again = new HookTokens(secret).sign({ ...claims, exp: claims.exp + 1 });
    expect(tokens.verify(again)?.nonce).toBe(tokens.verify(a)?.nonce);
    // Another call or another run: another nonce.
    const nonceOf = (other: Partial<typeof claims>) =>
      tokens.verify(tokens.sign({ ...claims, ...other }))?.nonce;
    expect(nonceOf({ toolCallId: "c2" })).not.toBe(tokens.verify(a)?.nonce);
    expect(nonceOf({ runId: "r2" })).not.toBe(tokens.verify(a)?.nonce);
    expect(nonceOf({ runId: "r1\u0000c1", toolCallId: "" })).not.toBe(tokens.verify(a)?.nonce);
  });

  it("gives a call the same nonce across a key rotation: a process with the new key first signs it alike", () => {
    const before = new HookTokens([{ id: "old", secret }]);
    const during = new HookTokens([
      { id: "new", secret: "another secret of at least 32 characters" },
      { id: "old", secret },
    ]);
    const signedBefore = during.verify(before.sign(claims));
    const signedDuring = during.verify(during.sign(claims));
    expect([signedBefore?.kid, signedDuring?.kid]).toEqual(["old", "new"]);
    expect(signedDuring?.nonce).toBe(signedBefore?.nonce);
  });

  it("refuses edited claims, another key's signature, garbage and oversized tokens", () => {
    const tokens = new HookTokens(secret);
    const token = tokens.sign(claims);
    const [body, mac] = token.split(".") as [string, string];
    const edited = Buffer.from(JSON.stringify({ ...tokens.verify(token), userId: "eve" })).toString(
      "base64url",
    );
    expect(tokens.verify(`${edited}.${mac}`)).toBeUndefined();
    expect(new HookTokens("x".repeat(32)).verify(token)).toBeUndefined();
    for (const bad of [
      "",
      ".",
      "abc",
      `${body}.`,
      `.${mac}`,
      `${body}.${mac}x`,
      `!!!.${mac}`,
      "a".repeat(5000),
    ])
      expect(tokens.verify(bad), bad.slice(0, 20)).toBeUndefined();
  });

  it("rotates keys: the first signs, every key verifies, an unknown kid is refused", () => {
    const old = new HookTokens([{ id: "old", secret: "o".repeat(32) }]);
    const rotated = new HookTokens([
      { id: "new", secret: "n".repeat(32) },
      { id: "old", secret: "o".repeat(32) },
    ]);
    const fromOld = old.sign(claims);
    expect(rotated.verify(fromOld)?.kid).toBe("old");
    expect(rotated.verify(rotated.sign(claims))?.kid).toBe("new");
    expect(old.verify(rotated.sign(claims))).toBeUndefined();
  });

  it("refuses weak secrets and an empty key list", () => {
    expect(() => new HookTokens("short")).toThrow(/at least 32 characters/);
    expect(() => new HookTokens([])).toThrow(/at least one key/);
    expect(() => new HookTokens([{ id: "a", secret: "s".repeat(31) }])).toThrow(/"a": use at least 32/);
  });

  it("digests arguments whatever their key order", () => {
    expect(digest({ a: 1, b: [2, 3] })).toBe(digest({ b: [2, 3], a: 1 }));
    expect(digest({ a: 1 })).not.toBe(digest({ a: 2 }));
  });
});
