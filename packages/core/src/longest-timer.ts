/**
 * The longest a Node timer waits, 2^31 - 1 ms (about 24.8 days): one set longer fires after 1 ms,
 * with a TimeoutOverflowWarning. Every time limit the packages take is at most this.
 */
export const LONGEST_TIMER_MS = 2 ** 31 - 1;
