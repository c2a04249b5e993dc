/**
 * `credhook demo`: the multi-cloud setup of `examples/multi-cloud.yaml` against
 * in-process fakes of API Gateway + Cognito, Azure API Management, Google
 * Cloud API Keys, Kong's Admin API and Apigee X's management API (the same
 * fakes the providers' tests use), so a new user can
 * watch one app's key land on several clouds with no cloud account.
 *
 * {@link startDemoClouds} is also what the multi-cloud tests start.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { AwsFake } from "@credhook/fakes/aws";
import type { ApimFake } from "@credhook/fakes/azure";
import type { ApiKeysFake } from "@credhook/fakes/gcp";
import type { KongFake } from "@credhook/fakes/kong";
import type { ApigeeFake } from "@credhook/fakes/apigee";
import { randomBase62 } from "@credhook/core/provider-kit";
import { startServer, type RunningServer } from "./app.js";
import { loadConfigFile } from "./config.js";
import { DEMO_PORT_SETTING, describeListenError } from "./listen-errors.js";
import { createLogger } from "./logging.js";

/** Why the demo cannot run from an installed package. */
const DEMO_NEEDS_REPOSITORY =
  "credhook demo runs the cloud fakes and examples/multi-cloud.yaml of the repository, which an installed package does not ship " +
  "(the fakes are the development-only package @credhook/fakes, not a dependency of @credhook/server): run it from a clone with `npx --yes pnpm@10 install && npx --yes pnpm@10 demo`";

/** The five running cloud fakes, seeded for `examples/multi-cloud.yaml`. */
export interface DemoClouds {
  aws: AwsFake;
  azure: ApimFake;
  gcp: ApiKeysFake;
  kong: KongFake;
  apigee: ApigeeFake;
  /** The variables `examples/multi-cloud.yaml` reads: `AWS_ENDPOINT`, `AZURE_ENDPOINT`, `GCP_ENDPOINT`, `KONG_ADMIN_URL`, `APIGEE_ENDPOINT`. */
  env: Record<string, string>;
  /** Stops the fakes. */
  close(): Promise<void>;
}

/**
 * Starts the fakes on 127.0.0.1 (free ports) with the operator's side of
 * the example: AWS usage plans `1el57v` and `2plan2` (API `5aba4csvd4`, stages
 * prod and beta) and `3plan3` (API `9xk3m2p7qa`); APIM products `gold` and
 * `silver` and APIs `orders-eu-1`, `orders-eu-2`; Google project `fake-project`;
 * a Kong Admin API (plans are the gateway's YAML); Apigee organisation `fake-org`
 * with API products `payments-gold`, `payments-silver`, `payments-1`, `payments-2`.
 */
export async function startDemoClouds(
  options: { awsQuotaModel?: "token-bucket" | "sliding-window" } = {},
): Promise<DemoClouds> {
  let fakes;
  try {
    fakes = await Promise.all([
      import("@credhook/fakes/aws"),
      import("@credhook/fakes/azure"),
      import("@credhook/fakes/gcp"),
      import("@credhook/fakes/kong"),
      import("@credhook/fakes/apigee"),
    ]);
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND") throw err;
    throw new Error(DEMO_NEEDS_REPOSITORY, { cause: err });
  }
  const [{ startAwsFake }, { startApimFake }, { startApiKeysFake }, { startKongFake }, { startApigeeFake }] = fakes;
  const aws = await startAwsFake(options.awsQuotaModel ? { apiGateway: { quotaModel: options.awsQuotaModel } } : {});
  aws.apiGateway.addUsagePlan({
    id: "1el57v",
    name: "Orders Gold",
    apiStages: [{ apiId: "5aba4csvd4", stage: "prod" }],
  });
  aws.apiGateway.addUsagePlan({
    id: "2plan2",
    name: "Orders Beta",
    apiStages: [{ apiId: "5aba4csvd4", stage: "beta" }],
  });
  aws.apiGateway.addUsagePlan({ id: "3plan3", name: "Catalog", apiStages: [{ apiId: "9xk3m2p7qa", stage: "prod" }] });
  const azure = await startApimFake({ products: ["gold", "silver"], apis: ["orders-eu-1", "orders-eu-2"] });
  const gcp = await startApiKeysFake({ projectId: "fake-project" });
  const kong = await startKongFake();
  const apigee = await startApigeeFake({
    organization: "fake-org",
    apiProducts: ["payments-gold", "payments-silver", "payments-1", "payments-2"],
  });
  return {
    aws,
    azure,
    gcp,
    kong,
    apigee,
    env: {
      AWS_ENDPOINT: aws.url,
      AZURE_ENDPOINT: azure.url,
      GCP_ENDPOINT: gcp.url,
      KONG_ADMIN_URL: kong.url,
      APIGEE_ENDPOINT: apigee.url,
    },
    close: async () => {
      await Promise.all([aws.close(), azure.close(), gcp.close(), kong.close(), apigee.close()]);
    },
  };
}

/** A short, non-reversible fingerprint of a secret, so the demo can show "the same key" without printing it. */
function fingerprint(secret: string): string {
  return `sha256:${createHash("sha256").update(secret).digest("hex").slice(0, 12)}`;
}

/** What each fake cloud holds now, one line per resource (key values as fingerprints). */
export function describeClouds(clouds: DemoClouds): string[] {
  const out: string[] = [];
  for (const k of clouds.aws.apiGateway.keys.values()) {
    out.push(
      `  AWS API Gateway  key ${k.id} "${k.name}" value ${fingerprint(k.value)} plans [${clouds.aws.apiGateway.plansOfKey(k.id).join(", ")}]`,
    );
  }
  for (const s of clouds.azure.listSubscriptions()) {
    out.push(`  Azure APIM       subscription ${s.sid} ${s.scope} (${s.state}) key ${fingerprint(s.primaryKey)}`);
  }
  for (const k of clouds.gcp.keys().filter((x) => !x.deleteTime)) {
    const targets = (k.restrictions.apiTargets ?? []).map((t) => t.service).join(", ");
    out.push(`  Google API Keys  key ${k.keyId} value ${fingerprint(k.keyString)} restricted to [${targets}]`);
  }
  for (const c of clouds.kong.consumers()) {
    const keys = clouds.kong.keyAuths().filter((k) => k.consumer.id === c.id);
    const groups = clouds.kong
      .acls()
      .filter((a) => a.consumer.id === c.id)
      .map((a) => a.group);
    const limits = clouds.kong.plugins().find((p) => p.consumer?.id === c.id && p.name === "rate-limiting")?.config;
    const shown = limits
      ? Object.entries(limits)
          .filter(([k, v]) => typeof v === "number" && ["second", "minute", "hour", "day", "month", "year"].includes(k))
          .map(([k, v]) => `${v}/${k}`)
          .join(", ")
      : "none";
    out.push(
      `  Kong             consumer ${c.username} key ${keys.map((k) => fingerprint(k.key)).join(", ")} ACL [${groups.join(", ")}] rate limit ${shown}`,
    );
  }
  for (const a of clouds.apigee.apps()) {
    const keys = a.credentials.map(
      (k) => `${fingerprint(k.consumerKey)} → [${k.apiProducts.map((p) => p.apiproduct).join(", ")}]`,
    );
    out.push(`  Apigee X         app ${a.name} (${a.developerEmail}) key ${keys.join("; ")}`);
  }
  return out.length > 0 ? out : ["  (nothing on any cloud)"];
}

/** Options of {@link runDemo}. */
export interface DemoOptions {
  /** Config to run. @default examples/multi-cloud.yaml of this repository */
  config?: string;
  /** Port. @default 8080 (0: a free one) */
  port?: number;
  /** Run the scripted walk-through before serving. @default true */
  walkthrough?: boolean;
  /** Where to print. @default process.stdout */
  print?: (line: string) => void;
}

/**
 * Starts the fakes and the server on `examples/multi-cloud.yaml` (on 127.0.0.1: the demo prints its
 * password and runs fake clouds, so it is reachable from this machine only), walks one app
 * through create → update → revoke (printing what lands on each cloud), and leaves the server
 * running. Returns the server and the fakes; close both to stop (closing the server also removes
 * the demo's temporary data directory).
 * @throws Error when it cannot start — the config file is missing, the port is in use (the message
 *   names the port and `--port`/`PORT`, as `credhook serve`'s does) — or the walk-through fails;
 *   whatever it started is stopped and its data directory removed first
 */
export async function runDemo(
  options: DemoOptions = {},
): Promise<{ server: RunningServer; clouds: DemoClouds; password: string }> {
  const print = options.print ?? ((l: string) => process.stdout.write(`${l}\n`));
  const file = options.config ?? fileURLToPath(new URL("../../../examples/multi-cloud.yaml", import.meta.url));
  if (!existsSync(file)) throw new Error(options.config ? `config file ${file} does not exist` : DEMO_NEEDS_REPOSITORY);
  const clouds = await startDemoClouds();
  const dataDir = mkdtempSync(join(tmpdir(), "credhook-demo-"));
  const removeDataDir = () => rmSync(dataDir, { recursive: true, force: true });
  let server: RunningServer | undefined;
  try {
    const password = randomBase62(24);
    server = await startDemoServer(file, options.port ?? 8080, {
      ...process.env,
      ...clouds.env,
      CREDHOOK_PASSWORD: password,
      CREDHOOK_DATA_DIR: dataDir,
    });
    await walkThrough(server, clouds, password, dataDir, print, options.walkthrough !== false);
    const running = server;
    return { server: { ...running, close: () => running.close().then(removeDataDir) }, clouds, password };
  } catch (err) {
    await server?.close();
    await clouds.close();
    removeDataDir();
    throw err;
  }
}

/**
 * The demo's server on `file` with `env`, on 127.0.0.1 and `port`.
 * @throws Error naming the port and `--port`/`PORT` when it is in use ({@link describeListenError})
 */
async function startDemoServer(file: string, port: number, env: Record<string, string | undefined>) {
  const config = await loadConfigFile(file, { env });
  try {
    return await startServer(config, { port, host: "127.0.0.1", logger: createLogger("error") });
  } catch (err) {
    throw describeListenError(err, config, env, DEMO_PORT_SETTING) ?? err;
  }
}

/** Prints where the demo runs and, with `steps`, walks one app through create → update → revoke; then how to try it. */
async function walkThrough(
  server: RunningServer,
  clouds: DemoClouds,
  password: string,
  dataDir: string,
  print: (line: string) => void,
  steps: boolean,
): Promise<void> {
  const auth = `Basic ${Buffer.from(`portal:${password}`).toString("base64")}`;
  const call = async (path: string, body: unknown) => {
    const res = await fetch(server.url + path, {
      method: "POST",
      headers: { authorization: auth, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : undefined };
  };
  print(
    `credhook demo: ${server.url} with gateways aws, azure, gcp, kong, apigee (fakes) and local; data in ${dataDir} (removed when it stops)`,
  );
  if (steps) {
    const show = async (title: string) => {
      print(`\n${title}`);
      for (const l of describeClouds(clouds)) print(l);
      for (const e of await server.credhook.store.stateFor("local").list("cred:")) {
        print(`  credhook embedded key ${e.key.slice(5)} (only a SHA-256 digest is stored)`);
      }
    };
    const storefront = { appName: "Storefront", appSlug: "storefront01", developer: "dev@example.com" };
    print(
      "\n1. Create 'Storefront': API 5aba4csvd4 (AWS, plan 1el57v) + orders-eu-1 (Azure, plan eu-gold) + catalog-1 (Kong, plan kong-gold) + payments-1 (Apigee, plan pay-gold) + weather (embedded)",
    );
    const created = await call("/v1/createCredentials", {
      ...storefront,
      apis: [
        { id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] },
        { id: "orders-eu-1", usagePlans: [{ id: "eu-gold" }] },
        { id: "catalog-1", usagePlans: [{ id: "kong-gold" }] },
        { id: "payments-1", usagePlans: [{ id: "pay-gold" }] },
        { id: "weather" },
      ],
    });
    const key = created.body as { apiKeyId: string; apiKey: string };
    print(
      `   → ${created.status}: apiKeyId ${key.apiKeyId}, apiKey ${fingerprint(key.apiKey)} — one value, on every cloud:`,
    );
    await show("   What the clouds hold:");
    print(
      "\n2. Update: plan 2plan2 ADDED on 5aba4csvd4; orders-eu-1 REMOVED (its gateway's last API: the key leaves Azure); Kong plan kong-gold → kong-silver; Apigee plan pay-silver ADDED",
    );
    const updated = await call("/v1/updateCredentials", {
      ...storefront,
      credentialType: "API_KEY",
      apiKeyId: key.apiKeyId,
      apis: [
        {
          id: "5aba4csvd4",
          action: "NONE",
          usagePlans: [
            { id: "1el57v", action: "NONE" },
            { id: "2plan2", action: "ADDED" },
          ],
        },
        { id: "orders-eu-1", action: "REMOVED", usagePlans: [{ id: "eu-gold", action: "REMOVED" }] },
        {
          id: "catalog-1",
          action: "NONE",
          usagePlans: [
            { id: "kong-gold", action: "REMOVED" },
            { id: "kong-silver", action: "ADDED" },
          ],
        },
        {
          id: "payments-1",
          action: "NONE",
          usagePlans: [
            { id: "pay-gold", action: "NONE" },
            { id: "pay-silver", action: "ADDED" },
          ],
        },
      ],
    });
    print(`   → ${updated.status}`);
    await show("   What the clouds hold:");
    print(
      "\n3. Create 'Atlas': maps-geo (Google, plan maps-basic) + orders-eu-2 (Azure) + catalog-2 (Kong) + payments-2 (Apigee) — Google makes the key, the others import it",
    );
    const atlas = await call("/v1/createCredentials", {
      appName: "Atlas",
      developer: "dev@example.com",
      apis: [
        { id: "maps-geo", usagePlans: [{ id: "maps-basic" }] },
        { id: "orders-eu-2" },
        { id: "catalog-2" },
        { id: "payments-2" },
      ],
    });
    const atlasKey = atlas.body as { apiKeyId: string; apiKey: string };
    print(`   → ${atlas.status}: apiKeyId ${atlasKey.apiKeyId}, apiKey ${fingerprint(atlasKey.apiKey)}`);
    await show("   What the clouds hold:");
    print("\n4. Create 'Mixed': maps-geo (Google) + 5aba4csvd4 (AWS) — AWS cannot import Google's key strings");
    const mixed = await call("/v1/createCredentials", {
      appName: "Mixed",
      developer: "dev@example.com",
      apis: [{ id: "maps-geo" }, { id: "5aba4csvd4" }],
    });
    print(`   → ${mixed.status}: ${((mixed.body?.messages as string[] | undefined) ?? []).join(" / ")}`);
    print("\n5. Revoke both credentials");
    const r1 = await call("/v1/revokeCredentials", {
      ...storefront,
      credentialType: "API_KEY",
      apiKeyId: key.apiKeyId,
    });
    const r2 = await call("/v1/revokeCredentials", {
      appName: "Atlas",
      developer: "dev@example.com",
      credentialType: "API_KEY",
      apiKeyId: atlasKey.apiKeyId,
    });
    print(`   → ${r1.status}, ${r2.status}`);
    await show("   What the clouds hold:");
  }
  print(`\nThe server keeps running on ${server.url}. Try it (Ctrl-C stops):`);
  print(`  curl -s -u 'portal:${password}' -H 'Content-Type: application/json' ${server.url}/v1/createCredentials \\`);
  print(
    `    -d '{"appName":"Mine","developer":"me@example.com","apis":[{"id":"5aba4csvd4","usagePlans":[{"id":"1el57v"}]},{"id":"orders-eu-1"}]}'`,
  );
}
