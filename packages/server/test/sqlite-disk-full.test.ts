/**
 * SQLite's disk full, for real: the store's file lives on a size-limited tmpfs (mounted by
 * the test; it runs as root in CI), and a filler file takes all but a few pages. Creates then
 * answer 503 + Retry-After "the credential store is unavailable" / "store.sqlite: the disk is
 * full …" (never 500), nothing is corrupted or half-written (PRAGMA integrity_check; every
 * live record is one the portal received), and service resumes when space returns.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, statfsSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { errorOf, LOCAL_YAML, startTestServer, type TestServer } from "./helpers.js";

/** better-sqlite3, as the SQLite store loads it (a dependency of the store package, not of the server). */
const Database = createRequire(fileURLToPath(import.meta.resolve("@credhook/store-sqlite")))("better-sqlite3") as new (
  path: string,
  options?: { readonly?: boolean },
) => {
  pragma(source: string, options?: { simple?: boolean }): unknown;
  prepare(sql: string): { all(): unknown[] };
  close(): void;
};

const mountPoint = mkdtempSync(join(tmpdir(), "credhook-full-"));
/** True once the tmpfs is mounted (mounting needs root, or CAP_SYS_ADMIN in a container). */
let mounted = false;
try {
  execFileSync("mount", ["-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", mountPoint], { stdio: "ignore" });
  mounted = true;
} catch {
  // Not permitted here: the test is skipped, and says so.
}

let s: TestServer;
const db = join(mountPoint, "credhook.db");
const filler = join(mountPoint, "filler");

beforeAll(async () => {
  if (!mounted) return;
  s = await startTestServer(
    LOCAL_YAML.replace('store: { sqlite: "${CREDHOOK_DATA_DIR}/credhook.db" }', `store: { sqlite: "${db}" }`),
  );
});
afterAll(async () => {
  await s?.close();
  if (mounted) execFileSync("umount", ["-l", mountPoint]);
  rmSync(mountPoint, { recursive: true, force: true });
});

const create = (name: string) =>
  s.post("/v1/createCredentials", {
    appName: name,
    developer: "full@example.com",
    apis: [{ id: "orders-1", usagePlans: [{ id: "1el57v" }] }],
  });

it.skipIf(!mounted)(
  "a full disk answers writes 503 with a clear message, corrupts nothing, and service resumes when space returns",
  async () => {
    expect((await create("Before")).status).toBe(200);
    // Take all the free space but 200 KiB (some pages of the WAL).
    const { bavail, bsize } = statfsSync(mountPoint);
    writeFileSync(filler, Buffer.alloc(Math.max(0, bavail * bsize - 200 * 1024)));
    const received: string[] = [];
    const refused: Array<{ status: number; retryAfter: string | null; messages: string[] }> = [];
    for (let i = 0; i < 200 && refused.length < 5; i++) {
      const res = await create(`Full ${i} ${"x".repeat(200)}`);
      if (res.status === 200) received.push(((await res.json()) as { apiKeyId: string }).apiKeyId);
      else
        refused.push({
          status: res.status,
          retryAfter: res.headers.get("retry-after"),
          messages: (await errorOf(res)).messages,
        });
    }
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expect(r.status).toBe(503);
      expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(r.messages[0]).toBe("the credential store is unavailable");
      expect(r.messages[1]).toMatch(
        /^store\.sqlite: the disk is full: writes are refused until space is freed \(SQLITE_FULL\)$/,
      );
    }
    // Reads still work while the disk is full.
    expect((await s.get("/readyz")).status).toBe(204);

    // Space returns: service resumes.
    rmSync(filler);
    const after = await create("After");
    expect(after.status).toBe(200);
    received.push(((await after.json()) as { apiKeyId: string }).apiKeyId);

    // Nothing corrupted, nothing half-written: the file is intact, and every live record is one the portal received.
    const check = new Database(db, { readonly: true });
    try {
      expect(check.pragma("integrity_check", { simple: true })).toBe("ok");
      const live = (
        check.prepare("SELECT public_id FROM credentials WHERE status = 'active'").all() as Array<{ public_id: string }>
      ).map((r) => r.public_id);
      for (const id of received) expect(live).toContain(id);
      expect(live.length).toBe(received.length + 1); // + "Before"
    } finally {
      check.close();
    }
    console.log(
      `sqlite disk full: ${received.length - 1} creates fitted, then ${refused.length} answered 503 (${refused[0]!.messages[1]}), Retry-After ${refused[0]!.retryAfter} s; after space returned: 200; integrity_check ok`,
    );
  },
  60_000,
);

it.skipIf(mounted)(
  "(skipped: mounting a tmpfs is not permitted here, so the disk-full test cannot run)",
  () => undefined,
);
