import "reflect-metadata";
import { type DependencyContainer, container as globalContainer } from "tsyringe";
import { describe, expect, it } from "vitest";
import { InvalidConfigError, NoOrchestratorError, UnknownOrchestratorError } from "../errors.js";
import type { OrchestratorFactory } from "./contract.js";
import {
  ORCHESTRATOR_REGISTRY,
  OrchestratorRegistry,
  registerOrchestrator,
  rootContainer,
} from "./registry.js";

const loop =
  (name: string): OrchestratorFactory<unknown> =>
  () => ({ name, run: async () => {} });

/** The orchestrator an agent on `parent` gets, resolved the way `new Agent()` does. */
function orchestratorOf(parent: DependencyContainer, name?: string): string {
  return parent.createChildContainer().resolve(ORCHESTRATOR_REGISTRY).create(name).name;
}

// Each test file has its own module instances, so the root registry here is this file's alone.
registerOrchestrator("root-loop", loop("root-loop"), { default: true });

describe("registerOrchestrator on a container", () => {
  it("changes the default of that container's agents only, not the root's", () => {
    const tenant = rootContainer.createChildContainer();
    registerOrchestrator("tenant-loop", loop("tenant-loop"), { container: tenant, default: true });
    expect(orchestratorOf(tenant)).toBe("tenant-loop");
    expect(orchestratorOf(rootContainer)).toBe("root-loop");
    expect(() => orchestratorOf(rootContainer, "tenant-loop")).toThrow(UnknownOrchestratorError);
    expect(rootContainer.resolve(ORCHESTRATOR_REGISTRY).names()).not.toContain("tenant-loop");
  });

  it("falls back to the parent's names, and lets a container override one", () => {
    const tenant = rootContainer.createChildContainer();
    registerOrchestrator("tenant-loop", loop("tenant-loop"), { container: tenant });
    registerOrchestrator("root-loop", loop("tenant's root-loop"), { container: tenant });
    const team = tenant.createChildContainer();
    registerOrchestrator("team-loop", loop("team-loop"), { container: team });
    expect(orchestratorOf(team, "team-loop")).toBe("team-loop");
    expect(orchestratorOf(team, "tenant-loop")).toBe("tenant-loop");
    expect(orchestratorOf(team, "root-loop")).toBe("tenant's root-loop");
    expect(orchestratorOf(rootContainer, "root-loop")).toBe("root-loop");
  });

  it("takes the default of the nearest container that has one", () => {
    const tenant = rootContainer.createChildContainer();
    registerOrchestrator("tenant-loop", loop("tenant-loop"), { container: tenant, default: true });
    const team = tenant.createChildContainer();
    registerOrchestrator("team-loop", loop("team-loop"), { container: team });
    expect(orchestratorOf(team)).toBe("tenant-loop");
    const plain = rootContainer.createChildContainer();
    registerOrchestrator("plain-loop", loop("plain-loop"), { container: plain });
    expect(orchestratorOf(plain)).toBe("root-loop");
  });

  it("adds to a container's registry once it has one", () => {
    const tenant = rootContainer.createChildContainer();
    registerOrchestrator("first", loop("first"), { container: tenant });
    registerOrchestrator("second", loop("second"), { container: tenant, default: true });
    expect(orchestratorOf(tenant, "first")).toBe("first");
    expect(orchestratorOf(tenant)).toBe("second");
  });

  it("works on a container with no registry above it", () => {
    const detached = globalContainer.createChildContainer();
    expect(detached.isRegistered(ORCHESTRATOR_REGISTRY, true)).toBe(false);
    registerOrchestrator("alone", loop("alone"), { container: detached, default: true });
    expect(orchestratorOf(detached)).toBe("alone");
    expect(detached.resolve(ORCHESTRATOR_REGISTRY).names()).toEqual(["alone"]);
  });
});

describe("registering a name again on the same container", () => {
  it("is refused with another factory, and the registered one stays", () => {
    const tenant = rootContainer.createChildContainer();
    registerOrchestrator("agentic", loop("agentic"), { container: tenant, default: true });
    const mine = () => ({ name: "mine", run: async () => {} });
    expect(() => registerOrchestrator("agentic", mine, { container: tenant })).toThrow(
      new InvalidConfigError(
        'registerOrchestrator("agentic"): the name is already registered on this container, with another factory; pass { replace: true } to replace it, or choose another name.',
      ),
    );
    expect(orchestratorOf(tenant)).toBe("agentic");
    expect(orchestratorOf(tenant, "agentic")).toBe("agentic");
  });

  it("replaces the registered factory with { replace: true }", () => {
    const tenant = rootContainer.createChildContainer();
    registerOrchestrator("agentic", loop("agentic"), { container: tenant, default: true });
    registerOrchestrator("agentic", loop("mine"), { container: tenant, replace: true });
    expect(orchestratorOf(tenant)).toBe("mine");
  });

  // A package loaded twice (two installed copies of it, each importing this core) registers twice.
  it("is harmless with the same factory, or a copy of it (the same source)", () => {
    const tenant = rootContainer.createChildContainer();
    const factory = loop("agentic");
    registerOrchestrator("agentic", factory, { container: tenant, default: true });
    registerOrchestrator("agentic", factory, { container: tenant, default: true });
    registerOrchestrator("agentic", loop("agentic"), { container: tenant, default: true });
    expect(orchestratorOf(tenant)).toBe("agentic");
  });
});

describe("OrchestratorRegistry", () => {
  it("lists the names of every level in an unknown-name error", () => {
    const tenant = rootContainer.createChildContainer();
    registerOrchestrator("tenant-loop", loop("tenant-loop"), { container: tenant });
    const create = () => orchestratorOf(tenant, "nope");
    expect(create).toThrow(UnknownOrchestratorError);
    expect(create).toThrow(
      'Unknown orchestrator "nope". Registered orchestrators: "tenant-loop", "root-loop".',
    );
  });

  it("refuses a name with leading or trailing whitespace, and says which name to register", () => {
    const registry = new OrchestratorRegistry();
    for (const name of [" spaced ", "spaced\n", "\tspaced"])
      expect(() => registry.register(name, loop("x"))).toThrow(
        new InvalidConfigError(
          `registerOrchestrator(${JSON.stringify(name)}): a name cannot begin or end with whitespace; register "spaced" instead.`,
        ),
      );
    expect(registry.names()).toEqual([]);
  });

  it("says an unknown name that is a registered one once trimmed: names are matched exactly", () => {
    const registry = new OrchestratorRegistry();
    registry.register("agentic", loop("agentic"));
    expect(() => registry.create(" agentic ")).toThrow(UnknownOrchestratorError);
    expect(() => registry.create(" agentic ")).toThrow(
      'Unknown orchestrator " agentic ": names are matched exactly, and "agentic" (without the whitespace) is registered. Registered orchestrators: "agentic".',
    );
  });

  it("without a default anywhere, asks for one", () => {
    const registry = new OrchestratorRegistry(new OrchestratorRegistry());
    registry.register("named", loop("named"));
    expect(registry.defaultName).toBeUndefined();
    expect(() => registry.create()).toThrow(NoOrchestratorError);
  });

  it("rejects an empty name and a factory that is not a function", () => {
    const registry = new OrchestratorRegistry();
    for (const name of ["", "   ", 3 as unknown as string])
      expect(() => registry.register(name, loop("x"))).toThrow(
        new InvalidConfigError("registerOrchestrator() needs a non-empty name."),
      );
    expect(() => registry.register("x", "agentic" as unknown as OrchestratorFactory<unknown>)).toThrow(
      'registerOrchestrator("x") needs a factory function.',
    );
    expect(() =>
      registerOrchestrator("", loop("x"), { container: rootContainer.createChildContainer() }),
    ).toThrow(InvalidConfigError);
    expect(registry.names()).toEqual([]);
  });

  it("refuses a container that is not one, and takes null options as none", () => {
    for (const container of [{}, null, "root"])
      expect(() =>
        registerOrchestrator("elsewhere", loop("elsewhere"), {
          container: container as unknown as DependencyContainer,
        }),
      ).toThrow(
        new InvalidConfigError(
          'registerOrchestrator("elsewhere"): container must be a tsyringe DependencyContainer.',
        ),
      );
    registerOrchestrator("no-options", loop("no-options"), null as unknown as undefined);
    expect(orchestratorOf(rootContainer, "no-options")).toBe("no-options");
  });

  // A misspelt `default` would silently leave the loop no default: every agent would get another one.
  it("refuses an option it does not know, naming the known ones, and registers nothing", () => {
    expect(() =>
      registerOrchestrator("misspelt", loop("misspelt"), { defualt: true } as unknown as {
        default: boolean;
      }),
    ).toThrow(
      new InvalidConfigError(
        'Invalid registerOrchestrator("misspelt") options: defualt is not an option (known: default, replace, container).',
      ),
    );
    expect(() => orchestratorOf(rootContainer, "misspelt")).toThrow(UnknownOrchestratorError);
  });

  // A class is a function too, but one that throws when called without `new`: refused where it is
  // registered, rather than as a TypeError from every `new Agent()` naming it.
  it("refuses a class in place of a factory, saying how to pass it", () => {
    class ReflectLoop {
      readonly name = "reflect";
      async run(): Promise<void> {}
    }
    const registry = new OrchestratorRegistry();
    expect(() =>
      registry.register("reflect", ReflectLoop as unknown as OrchestratorFactory<unknown>),
    ).toThrow(
      new InvalidConfigError(
        'registerOrchestrator("reflect") needs a factory function, got a class: pass () => new ReflectLoop() instead.',
      ),
    );
    expect(registry.names()).toEqual([]);
  });

  // Whether the factory returned a promise is asked by reading `then`: a proxy that refuses
  // properties it does not know is still the orchestrator it is, and a bad result is said to be one
  // whatever its `then` does.
  it("judges a result whose then throws when read by what it is, not by that error", () => {
    const refusingUnknown = <T extends object>(target: T): T =>
      new Proxy(target, {
        get: (object, key) => {
          if (!(key in object)) throw new Error(`no property ${String(key)}`);
          return Reflect.get(object, key);
        },
      });
    const registry = new OrchestratorRegistry();
    registry.register("strict-loop", () =>
      refusingUnknown({ name: "strict-loop", run: async () => {}, resume: undefined }),
    );
    expect(registry.create("strict-loop").name).toBe("strict-loop");
    const noLoop = () => ({
      name: "no-loop",
      // biome-ignore lint/suspicious/noThenProperty: a value whose then throws is what is tested.
      get then(): never {
        throw new Error("then is not readable");
      },
    });
    registry.register("no-loop", noLoop as unknown as OrchestratorFactory<unknown>);
    expect(() => registry.create("no-loop")).toThrow(
      new InvalidConfigError(`orchestrator "no-loop" is not an Orchestrator: it needs a run(ctx) method.`),
    );
  });

  it("wraps what a factory throws that is no Error, naming the orchestrator; an Error reaches the caller as is", () => {
    const registry = new OrchestratorRegistry();
    registry.register("throws-string", () => {
      throw "nope";
    });
    let thrown: unknown;
    try {
      registry.create("throws-string");
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(InvalidConfigError);
    expect(thrown).toMatchObject({
      message: `orchestrator "throws-string"'s factory threw: nope.`,
      cause: "nope",
    });
    const own = new InvalidConfigError(
      "Invalid reflect options: rounds must be a whole number >= 0, got 1.5.",
    );
    registry.register("throws-error", () => {
      throw own;
    });
    let thrownError: unknown;
    try {
      registry.create("throws-error");
    } catch (error) {
      thrownError = error;
    }
    expect(thrownError).toBe(own);
  });

  it("refuses a factory that returns a promise, and leaves no rejection of it unhandled", async () => {
    const unhandled: unknown[] = [];
    const record = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", record);
    try {
      const registry = new OrchestratorRegistry();
      const settingUp = async () => {
        throw new Error("set-up failed");
      };
      registry.register("async-loop", settingUp as unknown as OrchestratorFactory<unknown>);
      expect(() => registry.create("async-loop")).toThrow(
        new InvalidConfigError(
          `orchestrator "async-loop"'s factory returned a promise: it must return the orchestrator itself (do async set-up in run).`,
        ),
      );
      // Node reports a rejection left unhandled once the microtasks after it have run.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off("unhandledRejection", record);
    }
    expect(unhandled).toEqual([]);
  });
});
