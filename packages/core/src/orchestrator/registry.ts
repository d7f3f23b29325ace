import "reflect-metadata";
import { container, type DependencyContainer, type InjectionToken } from "tsyringe";
import { InvalidConfigError, NoOrchestratorError, UnknownOrchestratorError } from "../errors.js";
import type { Orchestrator, OrchestratorFactory } from "./contract.js";

/** The orchestrator plug-ins known to a container, by name. */
export class OrchestratorRegistry {
  readonly #factories = new Map<string, OrchestratorFactory<unknown>>();
  #defaultName: string | undefined;

  register(name: string, factory: OrchestratorFactory<unknown>, options: { default?: boolean } = {}): void {
    if (typeof name !== "string" || name.trim() === "")
      throw new InvalidConfigError("registerOrchestrator() needs a non-empty name.");
    if (typeof factory !== "function")
      throw new InvalidConfigError(`registerOrchestrator("${name}") needs a factory function.`);
    this.#factories.set(name, factory);
    if (options.default) this.#defaultName = name;
  }

  names(): string[] {
    return [...this.#factories.keys()];
  }

  get defaultName(): string | undefined {
    return this.#defaultName;
  }

  /** Builds the named orchestrator, or the default when no name is given. */
  create(name?: string, options?: unknown): Orchestrator {
    const chosen = name ?? this.#defaultName;
    if (chosen === undefined) throw new NoOrchestratorError();
    const factory = this.#factories.get(chosen);
    if (factory === undefined) throw new UnknownOrchestratorError(chosen, this.names());
    return validateOrchestrator(factory(options), `orchestrator "${chosen}"`);
  }
}

export function validateOrchestrator(orchestrator: unknown, what: string): Orchestrator {
  const candidate = orchestrator as Partial<Orchestrator> | null;
  if (candidate === null || typeof candidate !== "object" || typeof candidate.run !== "function")
    throw new InvalidConfigError(`${what} is not an Orchestrator: it needs a run(ctx) method.`);
  if (typeof candidate.name !== "string") throw new InvalidConfigError(`${what} needs a string name.`);
  return candidate as Orchestrator;
}

export const ORCHESTRATOR_REGISTRY: InjectionToken<OrchestratorRegistry> = Symbol.for(
  "agent-core.OrchestratorRegistry",
);

/** The root of every agent's container: it holds the registered plug-ins. */
export const rootContainer: DependencyContainer = container.createChildContainer();
rootContainer.registerInstance(ORCHESTRATOR_REGISTRY, new OrchestratorRegistry());

/**
 * Registers an orchestrator plug-in by name, on the root container unless another is given.
 * `{ default: true }` makes it the orchestrator of agents that do not name one.
 */
export function registerOrchestrator<Options>(
  name: string,
  factory: OrchestratorFactory<Options>,
  options: { default?: boolean; container?: DependencyContainer } = {},
): void {
  const target = options.container ?? rootContainer;
  target.resolve(ORCHESTRATOR_REGISTRY).register(name, factory as OrchestratorFactory<unknown>, options);
}
