/**
 * vitest setup file, loaded before every test file of every project (vitest.shared.ts): after
 * the file's last test, passed or failed, every process it started through `children.ts` is
 * ended with its process group.
 */
import { afterAll } from "vitest";
import { endAll, END_GRACE_MS } from "./children.js";

afterAll(endAll, END_GRACE_MS + 10_000);
