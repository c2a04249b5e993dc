// Baselines of scripts/bench-server.ts, each in its own process: `node` (bare node:http)
// or `express` (a bare express 5 app with express.json()), answering the webhook's three
// POSTs with the same JSON in and out as credhook — create: 200 with
// { credentialType, apiKeyId, apiKey }; update and revoke: 204 — and nothing else
// (no auth, validation, store or log line). Listens on 127.0.0.1:<argv[3]>, prints "ready".
//
// `journal` (argv[4]: a directory for the database file): the express app plus only the durable
// writes that credhook's rules "the intent is durable before any gateway call" and "every change is
// an event, written with it" (the transactional outbox) cost on the embedded default, through
// credhook's own SQLite store (packages/store-sqlite: WAL, group commit, its checkpoints) and a record
// of credhook's shape — create: insert the intent, then save it active with `credential.created`;
// update: find by the key id, save the intent, save the result with `credential.updated`; revoke:
// find, save `revoking`, delete with `credential.revoked`; and, as `credhook serve` with no sink does
// once a second, settle the pending events in one write. No auth, validation, provider state, key hashing or log line: the floor
// that any credhook on this store pays, to read its ratio to express against the goal's. Needs
// the TypeScript sources: bench-server.ts starts it with its own loader (tsx).
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import { createRequire } from "node:module";

const [mode, port] = [process.argv[2], Number(process.argv[3])];
let n = 0;
const created = () => ({
  credentialType: "API_KEY",
  apiKeyId: `lk${(n++).toString(36)}`,
  apiKey: randomBytes(30).toString("base64url"),
});

/** The `journal` mode's store and its writes; undefined in the other modes. */
const journal = mode === "journal" ? await openJournal(process.argv[4]) : undefined;

async function openJournal(dir) {
  const { openSqliteStore } = await import("../packages/store-sqlite/src/index.ts");
  const { appKeyOf } = await import("../packages/core/src/entry/store.ts");
  const { newRecordId } = await import("../packages/core/src/credential-record.ts");
  const { credentialEvent } = await import("../packages/core/src/events.ts");
  const store = await openSqliteStore({ path: `${dir}/journal.db` });
  setInterval(() => void store.outbox.settleUnsent(new Date().toISOString()), 1000).unref();
  const event = (type, rec) => [credentialEvent(type, rec, new Date().toISOString())];
  const now = () => new Date().toISOString();
  const record = (body) => {
    const t = now();
    const app = { appName: body.appName, developer: body.developer };
    const apis = (body.apis ?? []).map((a) => ({
      id: a.id,
      gateway: "local",
      usagePlans: (a.usagePlans ?? []).map((p) => p.id),
    }));
    return {
      id: newRecordId(),
      credentialType: "API_KEY",
      appKey: appKeyOf(app),
      app,
      publicId: "",
      status: "pending",
      apis,
      bindings: [],
      pending: { op: "create", startedAt: t, createOn: ["local"], removeFrom: [], previousApis: [], desiredApis: apis },
      createdAt: t,
      updatedAt: t,
    };
  };
  return {
    async create(body) {
      const rec = record(body);
      await store.insert(rec);
      const out = created();
      rec.publicId = out.apiKeyId;
      rec.bindings.push({ gateway: "local", nativeId: out.apiKeyId, resources: { kind: "apiKey" } });
      rec.status = "active";
      delete rec.pending;
      rec.updatedAt = now();
      await store.save(rec, event("credential.created", rec));
      return out;
    },
    async update(body) {
      const rec = await store.findByPublicId("API_KEY", body.apiKeyId);
      if (!rec) return 404;
      rec.status = "pending";
      rec.pending = {
        op: "update",
        startedAt: now(),
        createOn: [],
        removeFrom: [],
        previousApis: rec.apis,
        desiredApis: rec.apis,
      };
      await store.save(rec);
      rec.status = "active";
      delete rec.pending;
      rec.updatedAt = now();
      await store.save(rec, event("credential.updated", rec));
      return 204;
    },
    async revoke(body) {
      const rec = await store.findByPublicId("API_KEY", body.apiKeyId);
      if (!rec) return 204;
      rec.status = "revoking";
      rec.updatedAt = now();
      await store.save(rec);
      await store.delete(rec.id, event("credential.revoked", rec));
      return 204;
    },
  };
}

/** A bare express 5 app with express.json() (express is the server package's dependency, not the workspace root's). */
async function expressApp() {
  const express = createRequire(new URL("../packages/server/package.json", import.meta.url)).resolve("express");
  const { default: e } = await import(express);
  const app = e();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.use(e.json());
  return app;
}

let server;
if (mode === "journal") {
  const app = await expressApp();
  app.post("/v1/createCredentials", async (req, res) => res.status(200).json(await journal.create(req.body)));
  app.post("/v1/updateCredentials", async (req, res) => res.status(await journal.update(req.body)).end());
  app.post("/v1/revokeCredentials", async (req, res) => res.status(await journal.revoke(req.body)).end());
  server = createServer(app);
} else if (mode === "express") {
  const app = await expressApp();
  app.post("/v1/createCredentials", (req, res) => {
    void req.body.appName;
    res.status(200).json(created());
  });
  app.post(["/v1/updateCredentials", "/v1/revokeCredentials"], (req, res) => {
    void req.body.apiKeyId;
    res.status(204).end();
  });
  server = createServer(app);
} else {
  server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      void JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
      if (req.url === "/v1/createCredentials") {
        const body = JSON.stringify(created());
        res.writeHead(200, {
          "content-type": "application/json; charset=utf-8",
          "content-length": Buffer.byteLength(body),
        });
        res.end(body);
      } else {
        res.writeHead(204);
        res.end();
      }
    });
  });
}
server.listen(port, "127.0.0.1", () => process.stdout.write("ready\n"));
