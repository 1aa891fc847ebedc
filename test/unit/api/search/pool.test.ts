import { describe, expect, it } from "vitest";
import { createBufferPool } from "../../../../api/search/pool.js";

describe("createBufferPool", () => {
  it("serves small requests outside the pool and never keeps them", () => {
    const pool = createBufferPool({ minBytes: 1024 });
    const lease = pool.lease();
    expect(lease.allocate(100).length).toBe(100);
    lease.release();
    expect(pool.stats()).toEqual({ buffers: 0, bytes: 0 });
  });

  it("rounds large requests up to a power of two and reuses released buffers", () => {
    const pool = createBufferPool({ minBytes: 1024 });
    const a = pool.lease();
    const first = a.allocate(3000);
    expect(first.length).toBe(4096);
    a.release();
    a.release(); // idempotent
    expect(pool.stats()).toEqual({ buffers: 1, bytes: 4096 });
    const b = pool.lease();
    expect(b.allocate(2500)).toBe(first);
    expect(pool.stats()).toEqual({ buffers: 0, bytes: 0 });
    // While b holds it, another lease gets a different buffer.
    const c = pool.lease();
    expect(c.allocate(2500)).not.toBe(first);
  });

  it("picks the smallest free buffer that fits", () => {
    const pool = createBufferPool({ minBytes: 1024 });
    const l = pool.lease();
    const small = l.allocate(2000); // 2048
    const big = l.allocate(9000); // 16384
    l.release();
    const m = pool.lease();
    expect(m.allocate(1500)).toBe(small);
    expect(pool.stats().bytes).toBe(16384);
    expect(m.allocate(1500)).toBe(big); // the 2 KiB one is taken: the 16 KiB one fits
    expect(pool.stats()).toEqual({ buffers: 0, bytes: 0 });
  });

  it("keeps at most maxPooledBytes of free buffers and none above maxBufferBytes", () => {
    const pool = createBufferPool({ minBytes: 1024, maxBufferBytes: 8192, maxPooledBytes: 8192 });
    const l = pool.lease();
    l.allocate(5000); // 8192
    l.allocate(5000); // 8192
    expect(l.allocate(9000).length).toBe(9000); // above maxBufferBytes: a plain buffer of its exact size
    l.release();
    expect(pool.stats()).toEqual({ buffers: 1, bytes: 8192 });
  });
});
