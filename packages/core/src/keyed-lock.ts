/**
 * Serialises async work per key within this process: two calls with the same
 * key run one after the other, different keys in parallel.
 */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<void>>();

  /** Runs `fn` once every earlier call with `key` has settled; returns its result. */
  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const current = new Promise<void>((resolve) => (release = resolve));
    const tail = previous.then(() => current);
    this.tails.set(key, tail);
    try {
      await previous;
      return await fn();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }

  /**
   * Runs `fn` only if no call with `key` is queued or running now.
   * @returns `{ ran: true, value }`, or `{ ran: false }` when the key is busy
   */
  async tryRun<T>(key: string, fn: () => Promise<T>): Promise<{ ran: true; value: T } | { ran: false }> {
    if (this.tails.has(key)) return { ran: false };
    return { ran: true, value: await this.run(key, fn) };
  }

  /** Number of keys with work queued or running. */
  get size(): number {
    return this.tails.size;
  }
}
