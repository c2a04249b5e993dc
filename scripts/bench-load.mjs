// Load generator of scripts/bench-server.ts: runs autocannon in its own process
// (so that it does not share the measured server's event loop) with the options
// given as JSON in argv[2], and prints a JSON summary: req/s, latency p50/p99 (ms).
//
// Besides autocannon's own options, `kind` makes each request a webhook call:
//   "create": POST /v1/createCredentials for a new app each time (`tag` keeps names unique
//             across runs); the apiKeyIds answered are written, one a line, to `idsOut`;
//   "update": POST /v1/updateCredentials of each id in `idsIn` once, moving its API to another usage plan;
//   "revoke": POST /v1/revokeCredentials of each id in `idsIn` once.
// `auth` is the Authorization header value.
import { readFileSync, writeFileSync } from "node:fs";
import autocannon from "autocannon";

const { kind, idsIn, idsOut, tag = "", auth, ...options } = JSON.parse(process.argv[2]);
const ids = [];
if (kind) {
  const headers = { "content-type": "application/json", ...(auth ? { authorization: auth } : {}) };
  const given = idsIn ? readFileSync(idsIn, "utf8").split("\n").filter(Boolean) : [];
  let n = 0;
  const body = {
    create: () => ({
      appName: `Bench ${tag} ${n++}`,
      developer: "bench@example.com",
      apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }],
    }),
    update: () => ({
      credentialType: "API_KEY",
      apiKeyId: given[n++],
      apis: [
        {
          id: "5aba4csvd4",
          action: "NONE",
          usagePlans: [
            { id: "1el57v", action: "REMOVED" },
            { id: "2plan2", action: "ADDED" },
          ],
        },
      ],
    }),
    revoke: () => ({ credentialType: "API_KEY", apiKeyId: given[n++] }),
  }[kind];
  if (kind !== "create") {
    delete options.duration;
    options.amount = given.length;
  }
  options.requests = [
    {
      method: "POST",
      path: `/v1/${kind}Credentials`,
      headers,
      setupRequest: (req) => ({ ...req, body: JSON.stringify(body()) }),
      onResponse: (status, text) => {
        if (kind === "create" && status === 200) ids.push(JSON.parse(text).apiKeyId);
      },
    },
  ];
}
const t0 = performance.now();
const result = await autocannon(options);
const seconds = (performance.now() - t0) / 1000;
if (idsOut) writeFileSync(idsOut, ids.join("\n"));
process.stdout.write(
  JSON.stringify({
    rps: result.requests.average,
    total: result.requests.total,
    seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  }),
);
