import { describe, expect, it } from "vitest";
import { authorizedPrincipal } from "./authorize.js";
import { HttpError } from "./http-error.js";
import type { Principal } from "./server-options.js";

const request = new Request("http://localhost/runs");

describe("authorizedPrincipal", () => {
  it("takes a principal with a user id", async () => {
    expect(await authorizedPrincipal(() => ({ userId: "ada" }), request)).toEqual({ userId: "ada" });
  });

  it("answers 401 unauthorized for nobody: undefined, null, a throw, no user id", async () => {
    const nobodies: (() => unknown)[] = [
      () => undefined,
      () => null,
      async () => null,
      () => {
        throw new Error("no session");
      },
      () => ({}),
      () => ({ userId: "" }),
      () => ({ userId: 5 }),
      () => 42,
    ];
    for (const authorize of nobodies) {
      const error = await authorizedPrincipal(authorize as () => Principal, request).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(HttpError);
      expect(error).toMatchObject({ status: 401, code: "unauthorized" });
    }
  });
});
