/**
 * A provider in a fresh workspace package — TypeScript sources, no build — runs through
 * `credhook serve` by the command CONTRIBUTING.md documents ("Run a provider from its sources"):
 * in the package's folder, `CREDHOOK_FROM_SOURCE=1 node --conditions=dev-source
 * <checkout>/packages/server/bin/credhook.mjs serve`. A provider package that resolves nowhere is
 * "not installed", and the message names that command.
 */
import { cpSync, mkdtempSync, mkdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, it } from "vitest";
import { AUTH, PASSWORD, SERVER_YAML, spawnCredhook } from "./helpers.js";

const CLI = fileURLToPath(new URL("../bin/credhook.mjs", import.meta.url));
const FIXTURE = fileURLToPath(new URL("./fixtures/dev-source-provider/", import.meta.url));
const CORE = realpathSync(fileURLToPath(new URL("../../core/", import.meta.url)));
const PACKAGE = "@example/credhook-provider-greeting";

// The fresh package: the fixture's package.json and src/, and @credhook/core linked into its
// node_modules as `pnpm install` links a `workspace:*` dependency.
const dir = mkdtempSync(join(tmpdir(), "credhook-dev-source-"));
cpSync(FIXTURE, dir, { recursive: true });
mkdirSync(join(dir, "node_modules", "@credhook"), { recursive: true });
symlinkSync(CORE, join(dir, "node_modules", "@credhook", "core"), "dir");
writeFileSync(
  join(dir, "webhook.config.yaml"),
  `${SERVER_YAML.replace("server:\n", "server:\n  port: 0\n  host: 127.0.0.1\n")}gateways:
  greeting:
    provider: "${PACKAGE}"
    credentialType: API_KEY
routes:
  - default: greeting
`,
);
const env = { ...process.env, CREDHOOK_FROM_SOURCE: "1", CREDHOOK_PASSWORD: PASSWORD, CREDHOOK_DATA_DIR: dir };
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it("the documented command serves a provider package that has only TypeScript sources", async () => {
  const cli = spawnCredhook(
    [process.execPath, "--conditions=dev-source", CLI, "serve", "--config", "webhook.config.yaml"],
    { cwd: dir, env },
  );
  const base = await cli.listening();
  // its create ran, with the default the schema took from ./greeting.js (a .ts file)
  expect(cli.output()).toMatch(/"greeting":"hello from the TypeScript sources".*"msg":"greeting provider started"/);
  const res = await fetch(`${base}/v1/createCredentials`, {
    method: "POST",
    headers: { authorization: AUTH, "content-type": "application/json" },
    body: JSON.stringify({ appName: "Shop", developer: "dev@example.com", apis: [{ id: "orders", usagePlans: [] }] }),
  });
  expect(res.status).toBe(200);
  expect(await res.json()).toMatchObject({ credentialType: "API_KEY", apiKey: expect.any(String) });
  expect((await cli.stop()).code).toBe(0);
});

it("a provider package that resolves nowhere is 'not installed', and the message names the command for an unbuilt one", async () => {
  // (Whether the fresh package above resolves without --conditions=dev-source depends on the Node:
  // on Node 24 the sources' own module hooks add the condition to CommonJS resolution too, on Node
  // 22 they do not; the documented command passes it, so it works on both.)
  const absent = "@example/credhook-provider-absent";
  writeFileSync(
    join(dir, "absent.config.yaml"),
    `${SERVER_YAML}gateways:\n  absent:\n    provider: "${absent}"\n    credentialType: API_KEY\nroutes:\n  - default: absent\n`,
  );
  const cli = spawnCredhook([process.execPath, CLI, "check-config", "--config", "absent.config.yaml"], {
    cwd: dir,
    env,
  });
  const code = await new Promise((resolve) => cli.child.once("exit", resolve));
  expect(code).not.toBe(0);
  expect(cli.output()).toContain(`provider package '${absent}' is not installed`);
  expect(cli.output()).toContain("CREDHOOK_FROM_SOURCE=1 node --conditions=dev-source");
});
