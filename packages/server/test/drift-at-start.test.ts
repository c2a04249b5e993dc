/**
 * Serve's start-up drift check off the readiness path (issue 35): the records are walked before ready only when a
 * gateway the earlier starts had left the config (or on the first start); otherwise the server is ready while the
 * count still waits for the store, and the count arrives after, in the background. Through `startServer` and
 * `/metrics`, on a SQLite store whose paged reads a test can hold back.
 */
import { afterAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import type { CredentialStore } from "@credhook/core/store";
import { openSqliteStore } from "@credhook/store-sqlite";
import { createLogger, loadConfigFile, startServer } from "../src/index.js";
import { AUTH, LOCAL_YAML, PASSWORD } from "./helpers.js";

const dir = mkdtempSync(join(tmpdir(), "credhook-drift-start-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The test config (LOCAL_YAML on `dir`), without the gateways `drop` names. */
const configOf = async (drop: string[] = []) => {
  const doc = parse(LOCAL_YAML) as { gateways: Record<string, unknown>; routes: Array<{ gateway: string }> };
  for (const g of drop) delete doc.gateways[g];
  doc.routes = doc.routes.filter((r) => !drop.includes(r.gateway));
  const file = join(dir, `webhook-${drop.join("-")}.config.yaml`);
  writeFileSync(file, stringify(doc));
  return loadConfigFile(file, { env: { CREDHOOK_PASSWORD: PASSWORD, CREDHOOK_DATA_DIR: dir } });
};

/** The stores opened, closed after each server (a server leaves a store it was given open). */
const opened: CredentialStore[] = [];
/** Closes every store opened so far. */
const closeStores = async () => {
  for (const s of opened.splice(0)) await s.close();
};

/** The store file of every start, its `listPage` counted and, while `held` is set, held back until it resolves. */
const openStore = async (gate: { calls: number; held?: Promise<void> }) => {
  const store = await openSqliteStore({ path: join(dir, "credhook.db") });
  opened.push(store);
  const listPage = store.listPage.bind(store);
  return Object.assign(store, {
    listPage: async (...args: Parameters<CredentialStore["listPage"]>) => {
      gate.calls += 1;
      await gate.held;
      return listPage(...args);
    },
  });
};

describe("serve's drift count at start", () => {
  it("walks before ready on the first start, after ready once the gateways are known, and before ready again when one left the config", async () => {
    const logger = createLogger("silent");
    // The first start: no gateway known yet, the records are walked before it is ready.
    const first = { calls: 0 };
    const one = await startServer(await configOf(), {
      port: 0,
      host: "127.0.0.1",
      logger,
      store: await openStore(first),
    });
    expect(first.calls).toBeGreaterThan(0);
    await one.close();
    await closeStores();

    // The same gateways: ready while the count's read is still held back; the count arrives once it is let go.
    let release!: () => void;
    const second = { calls: 0, held: new Promise<void>((r) => (release = r)) };
    let released = false;
    // Only a build that waits for the count before ready gets here: the assertion below then fails.
    const fallback = setTimeout(() => {
      released = true;
      release();
    }, 10_000);
    const two = await startServer(await configOf(), {
      port: 0,
      host: "127.0.0.1",
      logger,
      store: await openStore(second),
    });
    expect(second.calls).toBeGreaterThan(0); // the count began…
    expect(released).toBe(false); // …and the server was ready while its read was still held back
    expect((await fetch(`${two.url}/livez`)).ok).toBe(true);
    clearTimeout(fallback);
    release();
    let drift = "";
    for (let i = 0; i < 100 && !drift.includes("credhook_credentials_drift{"); i++) {
      drift = await (await fetch(`${two.url}/metrics`, { headers: { authorization: AUTH } })).text();
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(drift).toMatch(/^credhook_credentials_drift\{kind="moved"\} 0$/m);
    // A credential on local-m2m, which the next config drops.
    const created = await fetch(`${two.url}/v1/createCredentials`, {
      method: "POST",
      headers: { authorization: AUTH, "content-type": "application/json" },
      body: JSON.stringify({ appName: "M2M", developer: "d@example.com", apis: [{ id: "m2m-orders" }] }),
    });
    expect(created.status).toBe(200);
    await two.close();
    await closeStores();

    // A known gateway left the config: walked before ready, and refused for the credential still on it.
    const third = { calls: 0 };
    await expect(
      startServer(await configOf(["local-m2m"]), { port: 0, host: "127.0.0.1", logger, store: await openStore(third) }),
    ).rejects.toThrow(
      /gateways\.local-m2m: the config no longer has gateway 'local-m2m', but 1 live credential is still on it/,
    );
    expect(third.calls).toBeGreaterThan(0);
    await closeStores();
  }, 30_000);
});
