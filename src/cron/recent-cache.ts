/**
 * A bounded map of recently used entries, in two generations: entries go into the young one; when
 * it holds `capacity` entries it becomes the old one (the previous old one is dropped whole), and a
 * hit in the old generation moves the entry back to the young one. So the cache keeps between
 * `capacity` and `2 × capacity` entries, every one used within the last `2 × capacity` insertions:
 * an approximate LRU with O(1) operations.
 *
 * Why not a Map evicted one key at a time (`keys().next()` + `delete`): V8 leaves deleted slots in
 * place until it rehashes, and finding the first live key walks over them, which made a full cache's
 * misses several µs slower.
 */
export class RecentCache<K, V> {
  private young = new Map<K, V>();
  private old = new Map<K, V>();

  constructor(private readonly capacity: number) {}

  /** The value for `key`, or undefined. */
  get(key: K): V | undefined {
    const young = this.young.get(key);
    if (young !== undefined) return young;
    const old = this.old.get(key);
    if (old !== undefined) this.set(key, old);
    return old;
  }

  /** Stores `value` for `key` in the young generation. */
  set(key: K, value: V): void {
    if (this.young.size >= this.capacity) {
      this.old = this.young;
      this.young = new Map();
    }
    this.young.set(key, value);
  }
}
