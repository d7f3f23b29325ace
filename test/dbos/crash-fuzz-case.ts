import fc from "fast-check";

/**
 * A case of the crash fuzz (crash-fuzz.test.ts), as plain data (fast-check prints it; the worker
 * reads it): a scripted durable run, what a client sends while it runs, and when workers die.
 */

/**
 * A tool call of a scripted reply. `effect` runs a tool with a side effect (`ms` long, failing or
 * not); `approval` the same behind an approval the test gives or refuses; `client` a client tool
 * the test answers with a result or an error.
 */
export type Call =
  | { kind: "effect"; ms: number; fails: boolean }
  | { kind: "approval"; ms: number; fails: boolean; approve: boolean }
  | { kind: "client"; answer: "result" | "error" };

/**
 * When the running worker is killed (SIGKILL): once `events` more events of the run's log have
 * appeared since it started (and `ms` later), or `ms` after it started (it may still be launching
 * or replaying the recorded steps then). A worker that finishes the run first is not killed.
 */
export type Crash = { after: "events"; events: number; ms: number } | { after: "ms"; ms: number };

export interface CrashScript {
  execution: "sequential" | "parallel";
  /** The model's replies with tool calls, in order; then `final`, then "ok" for any reply more. */
  turns: { calls: Call[] }[];
  /** The final text reply, streamed in chunks `pauseMs` apart. */
  final: { chunks: string[]; pauseMs: number };
  /**
   * Steering and follow-ups a client sends once `afterEvents` events of the run have appeared; or,
   * `whileDown`, after that once a worker was killed, before the next one starts (a message no
   * worker is there to take: the next one finds it waiting).
   */
  messages: { queue: "steer" | "followUp"; afterEvents: number; whileDown: boolean }[];
  /** One to three crashes, in order: each kills the worker running the run then. */
  crashes: Crash[];
}

/** A case as the worker gets it: the script, the run's id (its executor id too) and its log file. */
export interface CrashCase extends CrashScript {
  runId: string;
  logFile: string;
}

const call: fc.Arbitrary<Call> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant("effect"),
      ms: fc.integer({ min: 0, max: 500 }),
      fails: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("approval"),
      ms: fc.integer({ min: 0, max: 300 }),
      fails: fc.constant(false),
      approve: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("client"), answer: fc.constantFrom("result", "error") }),
  },
) as fc.Arbitrary<Call>;

/** About how many events the script's run logs: where its crashes and messages may land. */
function eventsOf(turns: CrashScript["turns"], final: CrashScript["final"]): number {
  const waits = turns.filter((turn) => turn.calls.some((c) => c.kind !== "effect")).length;
  const toolTurns = turns.reduce((sum, turn) => sum + 2 + 2 * turn.calls.length, 0);
  return 1 + toolTurns + 3 * waits + 2 + final.chunks.length + 1;
}

export const crashScript: fc.Arbitrary<CrashScript> = fc
  .record({
    execution: fc.constantFrom("sequential", "parallel"),
    turns: fc.array(fc.record({ calls: fc.array(call, { minLength: 1, maxLength: 3 }) }), {
      minLength: 1,
      maxLength: 3,
    }),
    final: fc.record({
      chunks: fc.array(fc.constantFrom("All ", "done", ", ", "thanks."), { minLength: 1, maxLength: 3 }),
      pauseMs: fc.integer({ min: 0, max: 300 }),
    }),
  })
  .chain(({ execution, turns, final }) => {
    const events = eventsOf(turns, final);
    const crash: fc.Arbitrary<Crash> = fc.oneof(
      {
        weight: 3,
        arbitrary: fc.record({
          after: fc.constant("events"),
          events: fc.integer({ min: 1, max: events }),
          ms: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 200 })),
        }),
      },
      // Launching takes a second or two: such a crash often lands while the worker launches or
      // replays what was recorded.
      {
        weight: 1,
        arbitrary: fc.record({ after: fc.constant("ms"), ms: fc.integer({ min: 0, max: 4000 }) }),
      },
    ) as fc.Arbitrary<Crash>;
    return fc.record({
      execution: fc.constant(execution),
      turns: fc.constant(turns),
      final: fc.constant(final),
      messages: fc.array(
        fc.record({
          queue: fc.constantFrom("steer", "followUp"),
          afterEvents: fc.integer({ min: 1, max: events }),
          whileDown: fc.boolean(),
        }),
        { maxLength: 2 },
      ),
      crashes: fc.array(crash, { minLength: 1, maxLength: 3 }),
    }) as fc.Arbitrary<CrashScript>;
  });
