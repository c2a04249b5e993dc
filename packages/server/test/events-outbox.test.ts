/**
 * Credential events end to end (issue 26): `credhook serve` processes on the cloud fakes.
 * - SQLite: an event committed and not yet delivered survives `kill -9`: after the restart it is
 *   delivered with the same id; a create the kill interrupted has no `credential.created` event
 *   (its change never committed).
 * - PostgreSQL: two instances deliver each event once between them, in order per app, and
 *   `credhook audit` answers the same on both instances' configs.
 */
import { afterAll, describe, expect, inject, it } from "vitest";
import type { ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Webhook } from "standardwebhooks";
import type { StoredEvent } from "@credhook/core";
import { startDemoClouds, type DemoClouds } from "../src/demo.js";
import { AUTH, LOCAL_YAML, PASSWORD, spawnCredhook, spawnServe, until, PROCESS_START_MS } from "./helpers.js";

const CLI = fileURLToPath(new URL("../bin/credhook.mjs", import.meta.url));
const SECRET = `whsec_${Buffer.from("events-e2e-secret-of-32-bytes!!!").toString("base64")}`;

/** A webhook sink on a free port: answers `status()` to each request, recording it and whether its signature verified. */
async function startSink(status: () => number) {
  const received: Array<{ id: string; type: string; subject: string; status: number; verified: boolean }> = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      let verified = true;
      try {
        new Webhook(SECRET).verify(body, req.headers as IncomingHttpHeaders & Record<string, string>);
      } catch {
        verified = false;
      }
      const event = JSON.parse(body) as { id: string; type: string; subject: string };
      const s = status();
      received.push({ id: event.id, type: event.type, subject: event.subject, status: s, verified });
      res.statusCode = s;
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`,
    received,
    close: () => new Promise((r) => server.close(r)),
  };
}

const eventsYaml = (sinkUrl: string) => `
events:
  sinks: [{ url: "${sinkUrl}", secret: "\${EVENTS_SECRET}", timeoutMs: 3000 }]
  pollIntervalMs: 100
  retry: { maxAttempts: 1000, initialDelayMs: 100, maxDelayMs: 200 }
`;

/** `credhook audit --json` with `config` and `env`: the events it lists. */
async function audit(config: string, env: Record<string, string>, args: string[] = []): Promise<StoredEvent[]> {
  const p = spawnCredhook([process.execPath, CLI, "audit", "--json", "--config", config, ...args], {
    env: { ...process.env, CREDHOOK_FROM_SOURCE: "1", ...env },
  });
  const code = await new Promise<number | null>((r) => p.child.once("exit", r));
  const out = p.output();
  if (code !== 0 && !args.includes("--undelivered")) throw new Error(`credhook audit exited ${code}: ${out}`);
  return JSON.parse(out.slice(out.indexOf("["))) as StoredEvent[];
}

const post = (base: string, path: string, body: unknown) =>
  fetch(`${base}${path}`, {
    method: "POST",
    headers: { authorization: AUTH, "content-type": "application/json" },
    body: JSON.stringify(body),
  });

describe("on SQLite, across kill -9", () => {
  let clouds: DemoClouds;
  let accept = false;
  let sink: Awaited<ReturnType<typeof startSink>>;
  const spawned: ChildProcess[] = [];
  afterAll(async () => {
    for (const c of spawned) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
    await sink?.close();
    await clouds?.close();
  });

  it(
    "delivers a committed event after a restart with the same id, and never one for a change that did not commit",
    async () => {
      clouds = await startDemoClouds();
      sink = await startSink(() => (accept ? 204 : 503));
      const dir = mkdtempSync(join(tmpdir(), "credhook-events-"));
      const config = join(dir, "webhook.config.yaml");
      const example = readFileSync(
        fileURLToPath(new URL("../../../examples/multi-cloud.yaml", import.meta.url)),
        "utf8",
      );
      // The reconcile loop on SQLite too (off by default): it finishes the create the kill interrupted.
      writeFileSync(config, `${example}${eventsYaml(sink.url)}reconcile: { intervalS: 1, settleS: 0 }\n`);
      const env = {
        ...clouds.env,
        CREDHOOK_PASSWORD: PASSWORD,
        CREDHOOK_DATA_DIR: dir,
        PORT: "0",
        EVENTS_SECRET: SECRET,
      };
      const first = await spawnServe(config, env, spawned);
      const apis = [
        { id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] },
        { id: "orders-eu-1", usagePlans: [{ id: "eu-gold" }] },
        { id: "weather" },
      ];
      const kept = await post(first.url, "/v1/createCredentials", {
        appName: "Kept",
        developer: "dev@example.com",
        apis,
      });
      expect(kept.status).toBe(200);
      // Its event was committed with the record: the sink sees it (and refuses it) before the crash.
      const attempt = await until("the sink to be offered the create's event", () =>
        sink.received.find((r) => r.type === "credential.created"),
      );
      expect(attempt).toMatchObject({ subject: "app:dev@example.com/Kept", status: 503, verified: true });

      // A create the kill interrupts between two gateway calls: its change never commits.
      clouds.azure.setLatency(1500);
      const crashy = post(first.url, "/v1/createCredentials", {
        appName: "Crashy",
        developer: "dev@example.com",
        apis,
      }).catch((err: unknown) => err);
      await until("Azure to receive the PUT", () =>
        clouds.azure.requests.some((r) => r.method === "PUT" && r.path.includes("/subscriptions/")),
      );
      first.child.kill("SIGKILL");
      expect(await crashy).toBeInstanceOf(Error);
      clouds.azure.setLatency(0);

      accept = true;
      const second = await spawnServe(config, env, spawned);
      await until(
        "the create's event to be delivered after the restart",
        () => sink.received.some((r) => r.id === attempt.id && r.status === 204),
        PROCESS_START_MS,
      );
      const events = await audit(config, env);
      const of = (app: string) => events.filter((e) => e.event.subject === `app:dev@example.com/${app}`);
      expect(of("Kept").map((e) => [e.event.type, e.event.id, e.status])).toEqual([
        ["credential.created", attempt.id, "delivered"],
      ]);
      // The same event, by its id, refused before the crash and accepted after it. (How many attempts the
      // store counted depends on whether the refusal's settle was written before the kill: not asserted.)
      const offers = sink.received.filter((r) => r.id === attempt.id).map((r) => r.status);
      expect(offers[0]).toBe(503);
      expect(offers.at(-1)).toBe(204);
      // The interrupted create never committed its change: no created event; its recovery (the reconcile loop) writes only abandoned/cleaned_up.
      expect(of("Crashy").map((e) => e.event.type)).not.toContain("credential.created");
      expect(sink.received.every((r) => r.verified)).toBe(true);
      const stopped = await new Promise<number | null>((r) => {
        second.child.once("exit", r);
        second.child.kill("SIGTERM");
      });
      expect(stopped).toBe(0);
    },
    4 * PROCESS_START_MS,
  );
});

describe("on PostgreSQL, two instances", () => {
  const url = inject("databaseUrl");
  const schema = `events_${randomUUID().replace(/-/g, "").slice(0, 12)}`;
  let sink: Awaited<ReturnType<typeof startSink>>;
  const spawned: ChildProcess[] = [];
  afterAll(async () => {
    for (const c of spawned) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
    await sink?.close();
  });

  it(
    "deliver each event once between them, in order per app, and audit lists the same from both configs",
    async () => {
      sink = await startSink(() => 200);
      const dir = mkdtempSync(join(tmpdir(), "credhook-events-pg-"));
      const env = {
        CREDHOOK_PASSWORD: PASSWORD,
        CREDHOOK_DATA_DIR: dir,
        PORT: "0",
        EVENTS_SECRET: SECRET,
        DATABASE_URL: url,
      };
      const configs = [0, 1].map((i) => {
        const file = join(dir, `instance-${i}.yaml`);
        writeFileSync(
          file,
          LOCAL_YAML.replace("server:\n", "server:\n  port: 0\n").replace(
            /^store: .*$/m,
            `store: { postgres: { url: "\${DATABASE_URL}", schema: ${schema} } }`,
          ) + eventsYaml(sink.url),
        );
        return file;
      });
      const instances = await Promise.all(configs.map((c) => spawnServe(c, env, spawned)));
      const apps = Array.from({ length: 8 }, (_, i) => `app-${i}`);
      await Promise.all(
        apps.map(async (appName, i) => {
          const base = instances[i % 2]!.url;
          const other = instances[(i + 1) % 2]!.url;
          const created = await post(base, "/v1/createCredentials", {
            appName,
            developer: "dev@example.com",
            apis: [{ id: "orders-1", usagePlans: [{ id: "1el57v" }] }],
          });
          expect(created.status).toBe(200);
          const { apiKeyId } = (await created.json()) as { apiKeyId: string };
          const updated = await post(other, "/v1/updateCredentials", {
            appName,
            developer: "dev@example.com",
            credentialType: "API_KEY",
            apiKeyId,
            apis: [{ id: "other-api", action: "ADDED", usagePlans: [{ id: "2plan2", action: "ADDED" }] }],
          });
          expect(updated.ok).toBe(true);
          const revoked = await post(base, "/v1/revokeCredentials", {
            appName,
            developer: "dev@example.com",
            credentialType: "API_KEY",
            apiKeyId,
          });
          expect(revoked.status).toBe(204);
        }),
      );
      const expected = apps.length * 3;
      await until("every event to reach the sink", () => sink.received.length >= expected, PROCESS_START_MS);
      // Each event reached the sink once: never by both instances.
      const ids = sink.received.map((r) => r.id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids).toHaveLength(expected);
      for (const appName of apps) {
        const types = sink.received.filter((r) => r.subject === `app:dev@example.com/${appName}`).map((r) => r.type);
        expect(types).toEqual(["credential.created", "credential.updated", "credential.revoked"]);
      }
      const [a, b] = await Promise.all(configs.map((c) => audit(c, env)));
      expect(a!.map((e) => [e.event.id, e.status])).toEqual(b!.map((e) => [e.event.id, e.status]));
      expect(a!.map((e) => e.event.id).sort()).toEqual([...ids].sort());
      expect(a!.every((e) => e.status === "delivered")).toBe(true);
      const one = await audit(configs[1]!, env, ["--app", "app-3"]);
      expect(one.map((e) => e.event.type)).toEqual(["credential.created", "credential.updated", "credential.revoked"]);
      await Promise.all(
        instances.map(
          (s) =>
            new Promise<number | null>((r) => {
              s.child.once("exit", r);
              s.child.kill("SIGTERM");
            }),
        ),
      );
    },
    4 * PROCESS_START_MS,
  );
});
