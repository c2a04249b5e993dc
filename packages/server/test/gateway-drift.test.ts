/**
 * The config changes, the stored credentials are checked against it (issue 32, docs/gateway-migration.md), as an
 * operator meets it: `check-config` and `serve` as processes count the live credentials that differ from the config
 * by kind, refuse a config that drops a gateway still holding live credentials (naming the count and the way out),
 * and accept it again with the gateway `retired: true`; `/metrics` carries the counts; a retired gateway refuses a
 * create and still revokes what it holds.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CLI,
  cliEnv,
  PROCESS_START_MS,
  runCredhook,
  SERVER_YAML,
  spawnCredhook,
  startTestServer,
  type TestServer,
} from "./helpers.js";

/** Two embedded-provider gateways, `old` (retired or not, or absent: then no `legacy` route) and `new`; `orders` routed to `ordersTo`, `legacy` to old. */
function yaml(ordersTo: "old" | "new", old: "kept" | "retired" | "absent"): string {
  const oldBlock =
    old === "absent"
      ? ""
      : `  old: { provider: local, credentialType: API_KEY${old === "retired" ? ", retired: true" : ""} }\n`;
  return `${SERVER_YAML}gateways:
${oldBlock}  new: { provider: local, credentialType: API_KEY }
routes:
  - { apis: [orders], gateway: ${ordersTo} }
${old === "absent" ? "" : "  - { apis: [legacy], gateway: old }\n"}  - { default: new }
`;
}

describe("drift against the stored credentials", () => {
  let s: TestServer | undefined;
  let dir: string;
  let apiKeyId: string;
  const app = { appName: "Shop", developer: "dev@example.com" };

  beforeAll(async () => {
    // One app's credential for API orders, made while orders routed to old.
    const first = await startTestServer(yaml("old", "kept"));
    dir = first.dir;
    const created = await first.call("/v1/createCredentials", { ...app, apis: [{ id: "orders" }] });
    expect(created.status).toBe(200);
    apiKeyId = created.json!.apiKeyId as string;
    await first.close();
  });
  afterAll(async () => {
    await s?.close();
  });

  /** `credhook <args>` on `config` written to the server's dir, with its data dir. */
  const credhook = (args: string[], config: string) => {
    const file = join(dir, `${args[0]}-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(file, config);
    return runCredhook(args, file, cliEnv(dir, { CREDHOOK_DATA_DIR: dir }));
  };

  it("check-config counts a credential whose API the routes send elsewhere", async () => {
    const r = await credhook(["check-config"], yaml("new", "kept"));
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/credentials: moved=1 gateway-missing=0 plans-changed=0 of 1 live credential differ/);
    expect(r.stdout).toMatch(/configuration is valid/);
  });

  it(
    "check-config and serve refuse a config that drops a gateway still holding a credential, naming the count and the fix",
    async () => {
      const fix =
        /gateways\.old: the config no longer has gateway 'old', but 1 live credential is still on it .*retired: true.*credhook apply --dry-run/;
      const check = await credhook(["check-config"], yaml("new", "absent"));
      expect(check.code).toBe(1);
      expect(check.stdout + check.stderr).toMatch(fix);

      const file = join(dir, "absent.yaml");
      writeFileSync(file, yaml("new", "absent"));
      const serve = spawnCredhook([process.execPath, CLI, "serve", "--config", file], {
        env: cliEnv(dir, { CREDHOOK_DATA_DIR: dir }),
      });
      const code = await new Promise<number | null>((resolve) => serve.child.once("exit", (c) => resolve(c)));
      expect(code).toBe(1);
      expect(serve.output()).toMatch(fix);
      expect(serve.output()).not.toMatch(/credhook listening/);
    },
    PROCESS_START_MS,
  );

  it("with the gateway retired: check-config passes, /metrics counts the drift, a create routed there is a 422, the revoke still reaches it", async () => {
    const check = await credhook(["check-config"], yaml("old", "retired"));
    expect(check.code).toBe(0);
    expect(check.stdout).toMatch(/old: provider=local .* retired \(no new credentials\)/);
    expect(check.stdout).toMatch(/warnings:\n.*routes\[0\] sends APIs to gateway 'old', which is retired/);

    // Serving on the first server's store, orders routed to new.
    s = await startTestServer(yaml("new", "retired"), { CREDHOOK_DATA_DIR: dir });
    expect(s.logs.join("\n")).toMatch(
      /credentials: moved=1 gateway-missing=0 plans-changed=0 of 1 live credential differ/,
    );
    const metrics = await (await s.get("/metrics")).text();
    expect(metrics).toMatch(/^credhook_credentials_drift\{kind="moved"\} 1$/m);
    expect(metrics).toMatch(/^credhook_credentials_drift\{kind="gateway-missing"\} 0$/m);

    const refused = await s.call("/v1/createCredentials", {
      appName: "Other",
      developer: "o@example.com",
      apis: [{ id: "legacy" }],
    });
    expect(refused.status).toBe(422);
    expect(refused.json).toMatchObject({
      status: 422,
      path: "/v1/createCredentials",
      messages: [
        expect.stringMatching(/gateway 'old' is retired/),
        expect.stringMatching(/route the app's APIs to another gateway/),
      ],
    });
    const revoked = await s.call("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId, ...app });
    expect(revoked.status).toBe(204);
    expect(await s.credhook.store.list()).toEqual([]);
  });
});
