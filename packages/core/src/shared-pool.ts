/**
 * Process-wide resources shared by every gateway with the same key — e.g. the
 * client-side rate limiters of one cloud account, whose quota all gateways on
 * that account draw from — and stopped when the last gateway releases them.
 */
export class SharedResourcePool<T> {
  private readonly entries = new Map<string, { value: T; users: number }>();

  /** @param stop called once with a resource when its last user releases it */
  constructor(private readonly stop: (value: T) => Promise<void>) {}

  /**
   * The resource under `key`, made with `create` if no gateway holds it yet.
   * Call `release()` once when the gateway closes (further calls do nothing).
   */
  acquire(key: string, create: () => T): { value: T; release: () => Promise<void> } {
    let entry = this.entries.get(key);
    if (!entry) this.entries.set(key, (entry = { value: create(), users: 0 }));
    entry.users += 1;
    const e = entry;
    let released = false;
    return {
      value: e.value,
      release: async () => {
        if (released) return;
        released = true;
        e.users -= 1;
        if (e.users === 0) {
          this.entries.delete(key);
          await this.stop(e.value);
        }
      },
    };
  }

  /** Number of resources held now. */
  get size(): number {
    return this.entries.size;
  }
}
