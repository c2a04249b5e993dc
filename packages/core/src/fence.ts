/**
 * Fencing of an operation that holds an app's lock: a lock held through a
 * database session can be lost while its holder still runs (the database
 * restarts or fails over, the session is terminated); another instance may then
 * take the lock. The holder must stop before its next cloud write or record
 * save. The store's lock implementation runs each holder inside a {@link Fence}
 * (an `AsyncLocalStorage` context, so it follows the operation through every
 * `await`, the providers' SDK middleware included), and:
 * - core checks {@link assertFenceHeld} before each provider call and each
 *   client-side rate-limiter slot (every HTTP attempt of a cloud call);
 * - the store checks it before each record write, and a store with fencing
 *   tokens makes the write conditional on the token too.
 * Node docs: https://nodejs.org/api/async_context.html#class-asynclocalstorage
 */
import { AsyncLocalStorage } from "node:async_hooks";

/** The lock an operation holds, as seen by the checks before its writes. */
export interface Fence {
  /** The lock's key (the app's identity, or a job name). */
  readonly key: string;
  /** The fencing token of this holding, when the store issues them (a decimal string, higher for later holders). */
  readonly token?: string;
  /**
   * Throws when the lock is lost, or its lease too close to its end for another write.
   * @throws LockLost
   */
  assertHeld(): void;
}

const current = new AsyncLocalStorage<Fence>();

/** Runs `fn` inside `fence`: {@link currentFence} is `fence` in everything `fn` awaits. */
export function runFenced<T>(fence: Fence, fn: () => Promise<T>): Promise<T> {
  return current.run(fence, fn);
}

/** The fence of the lock the running operation holds (the innermost), if any. */
export function currentFence(): Fence | undefined {
  return current.getStore();
}

/**
 * Checks the running operation's fence (no-op outside a fenced lock, e.g. on a single-instance store).
 * @throws LockLost the lock is lost
 */
export function assertFenceHeld(): void {
  current.getStore()?.assertHeld();
}
