import "reflect-metadata";
import { container, type DependencyContainer, type InjectionToken } from "tsyringe";
import { refuseUnknownKeys } from "../config-issues.js";
import {
  errorMessage,
  InvalidConfigError,
  NoOrchestratorError,
  UnknownOrchestratorError,
} from "../errors.js";
import { refusedPromise } from "../run/checked-messages.js";
import type { Orchestrator, OrchestratorFactory } from "./contract.js";

/**
 * The orchestrator plug-ins known to a container, by name. A container's own registry falls back
 * to its parent's: names it does not know, and the default when it has none of its own.
 */
export class OrchestratorRegistry {
  readonly #factories = new Map<string, OrchestratorFactory<unknown>>();
  readonly #parent: OrchestratorRegistry | undefined;
  #defaultName: string | undefined;

  constructor(parent?: OrchestratorRegistry) {
    this.#parent = parent;
  }

  register(
    name: string,
    factory: OrchestratorFactory<unknown>,
    options: { default?: boolean; replace?: boolean } = {},
  ): void {
    if (typeof name !== "string" || name.trim() === "")
      throw new InvalidConfigError("registerOrchestrator() needs a non-empty name.");
    // Agents name an orchestrator exactly: one registered as " agentic " no agent would find by
    // "agentic", and whitespace at either end is a slip, not a name.
    if (name !== name.trim())
      throw new InvalidConfigError(
        `registerOrchestrator(${JSON.stringify(name)}): a name cannot begin or end with whitespace; register "${name.trim()}" instead.`,
      );
    if (typeof factory !== "function")
      throw new InvalidConfigError(`registerOrchestrator("${name}") needs a factory function.`);
    // A class is a function too, but calling it without `new` throws: said here, where the mistake
    // is, rather than by a TypeError from every agent that names it.
    if (/^class\b/.test(Function.prototype.toString.call(factory)))
      throw new InvalidConfigError(
        `registerOrchestrator("${name}") needs a factory function, got a class: pass () => new ${factory.name || "YourClass"}() instead.`,
      );
    const registered = this.#factories.get(name);
    // A package loaded twice (two installed copies, one core) registers its name twice, with two
    // factories of the same source: harmless. Another factory would silently change what every
    // agent naming it (or, for the default, every agent) runs: only on request.
    if (
      registered !== undefined &&
      !options.replace &&
      registered !== factory &&
      String(registered) !== String(factory)
    )
      throw new InvalidConfigError(
        `registerOrchestrator("${name}"): the name is already registered on this container, with another factory; pass { replace: true } to replace it, or choose another name.`,
      );
    this.#factories.set(name, factory);
    if (options.default) this.#defaultName = name;
  }

  /** Every name this registry resolves, its own and its ancestors'. */
  names(): string[] {
    return [...new Set([...this.#factories.keys(), ...(this.#parent?.names() ?? [])])];
  }

  get defaultName(): string | undefined {
    return this.#defaultName ?? this.#parent?.defaultName;
  }

  /** Builds the named orchestrator, or the default when no name is given. */
  create(name?: string, options?: unknown): Orchestrator {
    const chosen = name ?? this.defaultName;
    if (chosen === undefined) throw new NoOrchestratorError();
    const factory = this.#factory(chosen);
    if (factory === undefined) throw new UnknownOrchestratorError(chosen, this.names());
    let built: unknown;
    try {
      built = factory(options);
    } catch (thrown) {
      // A plug-in's own error (its options refused by validateOptions) reaches the caller as it
      // is; anything else thrown (a string) would be no error at all, so it is named and kept.
      if (thrown instanceof Error) throw thrown;
      throw new InvalidConfigError(`orchestrator "${chosen}"'s factory threw: ${errorMessage(thrown)}.`, {
        cause: thrown,
      });
    }
    // An async factory: the agent is built synchronously, so its promise would be dropped, and a
    // rejection of it would go unhandled (which ends a Node process).
    if (refusedPromise(built))
      throw new InvalidConfigError(
        `orchestrator "${chosen}"'s factory returned a promise: it must return the orchestrator itself (do async set-up in run).`,
      );
    return validateOrchestrator(built, `orchestrator "${chosen}"`);
  }

  #factory(name: string): OrchestratorFactory<unknown> | undefined {
    const own = this.#factories.get(name);
    return own === undefined && this.#parent !== undefined ? this.#parent.#factory(name) : own;
  }
}

export function validateOrchestrator(orchestrator: unknown, what: string): Orchestrator {
  const candidate = orchestrator as Partial<Orchestrator> | null;
  if (candidate === null || typeof candidate !== "object" || typeof candidate.run !== "function")
    throw new InvalidConfigError(`${what} is not an Orchestrator: it needs a run(ctx) method.`);
  if (typeof candidate.name !== "string") throw new InvalidConfigError(`${what} needs a string name.`);
  if (candidate.resume !== undefined && typeof candidate.resume !== "function")
    throw new InvalidConfigError(`${what}'s resume, when it has one, must be a method resume(ctx, calls).`);
  return candidate as Orchestrator;
}

export const ORCHESTRATOR_REGISTRY: InjectionToken<OrchestratorRegistry> = Symbol.for(
  "agent-core.OrchestratorRegistry",
);

/** The root of every agent's container: it holds the registered plug-ins. */
export const rootContainer: DependencyContainer = container.createChildContainer();
rootContainer.registerInstance(ORCHESTRATOR_REGISTRY, new OrchestratorRegistry());

/** The options `registerOrchestrator` takes; any other key (a misspelt `defualt`) is refused. */
const REGISTER_OPTIONS = ["default", "replace", "container"];

/**
 * Registers an orchestrator plug-in by name, on the root container unless another is given.
 * `{ default: true }` makes it the orchestrator of agents that do not name one. Registering on
 * another container affects only the agents on it and on its descendants (there it may take a name
 * an ancestor has). A name the container already has is refused with an `InvalidConfigError`,
 * unless the factory is the registered one or has its source text (a package loaded twice), or
 * the call passes `{ replace: true }`: then the new factory replaces it. A name that begins or ends
 * with whitespace is refused too: agents name an orchestrator exactly.
 */
export function registerOrchestrator<Options>(
  name: string,
  factory: OrchestratorFactory<Options>,
  options: { default?: boolean; replace?: boolean; container?: DependencyContainer } = {},
): void {
  refuseUnknownKeys(`registerOrchestrator("${String(name)}") options`, options ?? {}, REGISTER_OPTIONS);
  const { container = rootContainer } = options ?? {};
  // tsyringe would answer a container of another kind with a TypeError of its own.
  if (typeof (container as Partial<DependencyContainer> | null)?.isRegistered !== "function")
    throw new InvalidConfigError(
      `registerOrchestrator("${String(name)}"): container must be a tsyringe DependencyContainer.`,
    );
  ownRegistry(container).register(name, factory as OrchestratorFactory<unknown>, options ?? {});
}

/**
 * The registry of this very container, made on first use. `resolve` alone would return an
 * ancestor's, and registering there would leak to every agent on that ancestor. The new registry's
 * parent is the one nearest above at this moment: a registry added later to a container in between
 * is not seen by it.
 */
function ownRegistry(target: DependencyContainer): OrchestratorRegistry {
  if (target.isRegistered(ORCHESTRATOR_REGISTRY, false)) return target.resolve(ORCHESTRATOR_REGISTRY);
  const parent = target.isRegistered(ORCHESTRATOR_REGISTRY, true)
    ? target.resolve(ORCHESTRATOR_REGISTRY)
    : undefined;
  const registry = new OrchestratorRegistry(parent);
  target.registerInstance(ORCHESTRATOR_REGISTRY, registry);
  return registry;
}
