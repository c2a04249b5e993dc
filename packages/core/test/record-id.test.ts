/** Record ids: UUID version 7, so that they sort by creation time (the stores' primary-key index grows at one end). */
import { expect, it } from "vitest";
import { newRecordId } from "../src/credential-record.js";

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

it("is a version 7 UUID carrying the time it was made, unique, and sorts after ids made a millisecond earlier", async () => {
  const before = Date.now();
  const first = newRecordId();
  await new Promise((r) => setTimeout(r, 2));
  const ids = Array.from({ length: 1000 }, newRecordId);
  expect(first).toMatch(UUID_V7);
  const ms = Number.parseInt(first.replaceAll("-", "").slice(0, 12), 16);
  expect(ms).toBeGreaterThanOrEqual(before);
  expect(ms).toBeLessThanOrEqual(Date.now());
  expect(new Set(ids).size).toBe(ids.length);
  for (const id of ids) expect(id > first).toBe(true);
});
