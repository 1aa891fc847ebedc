/**
 * A small pool of large byte buffers, for search answers written by api/search/raw.ts.
 *
 * Why: every answer of a few hundred records is a fresh buffer of hundreds of kilobytes outside
 * the JavaScript heap. V8 counts such external memory and starts a full (mark-compact) collection
 * each time it has grown by about 64 MiB since the last one (the external allocation limit,
 * `Heap::ReportExternalMemoryPressure`), so large answers made the API run a full collection
 * every few dozen requests (bench search, `--trace-gc`: 56 mark-compacts for ~2,400 answers of
 * 400 KB). Reusing the buffers once the answer has been written keeps that memory flat.
 *
 * Rules: only requests of at least {@link BufferPoolOptions.minBytes} use the pool (smaller
 * ones come from Node's own 8 KiB slab); a buffer's capacity is the next power of two; at most
 * {@link BufferPoolOptions.maxPooledBytes} of free buffers are kept (others are left to the
 * garbage collector). A buffer must be released only when nothing reads it any more (for a
 * response: its `finish` event, i.e. the bytes were handed to the socket); a buffer that is
 * never released is simply collected.
 * @module
 */

/** Options of {@link createBufferPool}. */
export interface BufferPoolOptions {
  /** Smallest request served from the pool, in bytes. Default 64 KiB. */
  minBytes?: number;
  /** Largest buffer kept for reuse, in bytes. Default 8 MiB. */
  maxBufferBytes?: number;
  /** Total bytes of free buffers kept. Default 32 MiB. */
  maxPooledBytes?: number;
}

/** One borrower's view of a pool: an allocator and the release of what it allocated. */
export interface BufferLease {
  /** Returns a buffer of at least `size` bytes (pooled when large enough). */
  allocate(size: number): Buffer;
  /** Gives back the buffers this lease allocated. Idempotent. */
  release(): void;
}

/** A pool of reusable buffers (see the module notes). */
export interface BufferPool {
  /** A new lease on the pool. */
  lease(): BufferLease;
  /** Free buffers currently kept, and their total capacity in bytes (for metrics and tests). */
  stats(): { buffers: number; bytes: number };
}

/** Smallest power of two ≥ n (n ≥ 1). */
function pow2(n: number): number {
  return 2 ** Math.ceil(Math.log2(n));
}

/** Creates a {@link BufferPool}. */
export function createBufferPool(opts: BufferPoolOptions = {}): BufferPool {
  const minBytes = opts.minBytes ?? 64 * 1024;
  const maxBufferBytes = opts.maxBufferBytes ?? 8 * 1024 * 1024;
  const maxPooledBytes = opts.maxPooledBytes ?? 32 * 1024 * 1024;
  const free: Buffer[] = [];
  let freeBytes = 0;

  function take(size: number): Buffer {
    let best = -1;
    for (let i = 0; i < free.length; i++) {
      const b = free[i] as Buffer;
      if (b.length >= size && (best < 0 || b.length < (free[best] as Buffer).length)) best = i;
    }
    if (best < 0) return Buffer.allocUnsafeSlow(pow2(size));
    const [b] = free.splice(best, 1) as [Buffer];
    freeBytes -= b.length;
    return b;
  }

  function give(b: Buffer): void {
    if (b.length > maxBufferBytes || freeBytes + b.length > maxPooledBytes) return;
    free.push(b);
    freeBytes += b.length;
  }

  return {
    lease() {
      const held: Buffer[] = [];
      return {
        allocate(size) {
          if (size < minBytes || size > maxBufferBytes) return Buffer.allocUnsafe(size);
          const b = take(size);
          held.push(b);
          return b;
        },
        release() {
          for (const b of held.splice(0)) give(b);
        },
      };
    },
    stats: () => ({ buffers: free.length, bytes: freeBytes }),
  };
}
