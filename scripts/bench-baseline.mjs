// Baselines of scripts/bench-server.ts, each in its own process: `node` (bare node:http)
// or `express` (a bare express 5 app with express.json()), answering the webhook's three
// POSTs with the same JSON in and out as credhook — create: 200 with
// { credentialType, apiKeyId, apiKey }; update and revoke: 204 — and nothing else
// (no auth, validation, store or log line). Listens on 127.0.0.1:<argv[3]>, prints "ready".
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import { createRequire } from "node:module";

const [mode, port] = [process.argv[2], Number(process.argv[3])];
let n = 0;
const created = () => ({ credentialType: "API_KEY", apiKeyId: `lk${(n++).toString(36)}`, apiKey: randomBytes(30).toString("base64url") });

let server;
if (mode === "express") {
  // express is the server package's dependency, not the workspace root's.
  const express = createRequire(new URL("../packages/server/package.json", import.meta.url)).resolve("express");
  const { default: e } = await import(express);
  const app = e();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.use(e.json());
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
        res.writeHead(200, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(body) });
        res.end(body);
      } else {
        res.writeHead(204);
        res.end();
      }
    });
  });
}
server.listen(port, "127.0.0.1", () => process.stdout.write("ready\n"));
