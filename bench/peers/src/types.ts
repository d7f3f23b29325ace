/** What one benchmark run is asked to do: the same script for every framework. */
export interface RunConfig {
  /** Tool cycles per run: the model calls `add` this many times, then answers "done". */
  cycles: number;
  /** Milliseconds each model call waits before it answers (0: answers at once). */
  latencyMs: number;
  /** Tool results padded to 1,024 characters (W3) instead of the bare number. */
  bigResults: boolean;
  /** Called inside every tool execution with the tool's result value (W3 timestamps, heap probe). */
  onTool?: (value: number) => void;
}

/** One framework, driven the same way as every other: build once, then run as often as asked. */
export interface Adapter {
  /** Short id used on the command line and in result files. */
  id: string;
  /** Row label in the report. */
  label: string;
  /** The npm packages whose versions the report lists. */
  packages: string[];
  /**
   * Builds what the framework shares between runs (model, tool, agent definition) and returns one run:
   * a whole prompt → K tool cycles → "done" conversation, every event consumed, resolving to the final text.
   * Runs may overlap (W2): one `run` is called 1,000 times at once.
   */
  make(config: RunConfig): Promise<() => Promise<string>>;
}
