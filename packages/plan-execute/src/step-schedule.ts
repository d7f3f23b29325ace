import type { PlanStep } from "./plan.js";

/**
 * The steps of a plan still to run, and which of them can run now: those whose every dependency
 * has a result. Each step counts the dependencies it still waits on, so a wave costs the steps it
 * touches, not a pass over the whole plan (a plan of thousands of steps in one chain stays linear).
 */
export class StepSchedule {
  /** In plan order: a `Set` keeps the order it was given while steps leave it. */
  readonly #pending: Set<PlanStep>;
  readonly #position = new Map<PlanStep, number>();
  readonly #waitingOn = new Map<PlanStep, number>();
  readonly #dependents = new Map<string, PlanStep[]>();
  #ready: PlanStep[] = [];

  /** `hasResult` says which dependencies are met already (steps of earlier waves or plans). */
  constructor(steps: readonly PlanStep[], hasResult: (id: string) => boolean) {
    this.#pending = new Set(steps);
    steps.forEach((step, index) => {
      this.#position.set(step, index);
      const unmet = step.dependsOn.filter((id) => !hasResult(id));
      this.#waitingOn.set(step, unmet.length);
      for (const id of unmet) {
        const waiting = this.#dependents.get(id);
        if (waiting) waiting.push(step);
        else this.#dependents.set(id, [step]);
      }
      if (unmet.length === 0) this.#ready.push(step);
    });
  }

  get size(): number {
    return this.#pending.size;
  }

  /** The steps still to run, in plan order. */
  pending(): PlanStep[] {
    return [...this.#pending];
  }

  /** Takes the steps that can run now, in plan order: they are no longer pending. */
  takeReady(): PlanStep[] {
    const ready = this.#ready.sort((a, b) => (this.#position.get(a) ?? 0) - (this.#position.get(b) ?? 0));
    this.#ready = [];
    for (const step of ready) this.#pending.delete(step);
    return ready;
  }

  /** The step with this id has a result: the steps that waited only on it can run. */
  succeeded(id: string): void {
    for (const step of this.#dependents.get(id) ?? []) {
      const left = (this.#waitingOn.get(step) as number) - 1;
      this.#waitingOn.set(step, left);
      if (left === 0) this.#ready.push(step);
    }
  }
}
