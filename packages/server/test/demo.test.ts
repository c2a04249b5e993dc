import { expect, it } from "vitest";
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { runDemo } from "../src/demo.js";
import { spawnTracked } from "./children.js";

it("`credhook demo` walks one app across AWS, Azure, Google, Kong, Apigee and the embedded provider, and leaves nothing behind", async () => {
  const lines: string[] = [];
  const { server, clouds, password } = await runDemo({ port: 0, print: (l) => lines.push(l) });
  try {
    const out = lines.join("\n");
    // step 1: one value on AWS, Azure and the embedded provider (fingerprints, never the key)
    const created = /apiKeyId (\S+), apiKey (sha256:[0-9a-f]{12})/.exec(out);
    expect(created).not.toBeNull();
    const fp = created![2]!;
    expect(out).toContain(
      `AWS API Gateway  key ${created![1]} "credhook/dev@example.com/storefront01" value ${fp} plans [1el57v]`,
    );
    expect(out).toMatch(new RegExp(`Azure APIM {7}subscription \\S+-p-gold /products/gold \\(active\\) key ${fp}`));
    expect(out).toContain("credhook embedded key");
    // the same value on Kong (key-auth, ACL group, the plan's rate limit) and Apigee (imported consumer key, the plan's product)
    expect(out).toMatch(
      new RegExp(
        `Kong {13}consumer credhook-kong-\\S+ key ${fp} ACL \\[catalog-1\\] rate limit 600/minute, 20000/hour`,
      ),
    );
    expect(out).toMatch(
      new RegExp(`Apigee X {9}app credhook-apigee-\\S+ \\(dev@example.com\\) key ${fp} → \\[payments-gold\\]`),
    );
    expect(out).toMatch(/Kong {13}consumer \S+ key sha256:[0-9a-f]{12} ACL \[catalog-1\] rate limit 60\/minute/);
    expect(out).toMatch(
      /Apigee X {9}app \S+ \(dev@example.com\) key sha256:[0-9a-f]{12} → \[payments-gold, payments-silver\]/,
    );
    expect(out).toContain(`plans [1el57v, 2plan2]`);
    expect(out).toMatch(
      /Google API Keys {2}key credhook-\S+ value sha256:[0-9a-f]{12} restricted to \[maps-geo\.apigateway\.fake-project\.cloud\.goog\]/,
    );
    expect(out).toContain("→ 422: gateway 'aws' cannot import the API key values gateway 'gcp' generates");
    expect(out).toContain("→ 204, 204");
    expect(
      out
        .trimEnd()
        .split("\n")
        .some((l) => l === "  (nothing on any cloud)"),
    ).toBe(true);
    // no key value is printed; the server keeps serving for the user's own calls
    expect(out).not.toMatch(/[0-9A-Za-z]{40}/);
    const res = await fetch(`${server.url}/v1/health`, {
      headers: { authorization: `Basic ${Buffer.from(`portal:${password}`).toString("base64")}` },
    });
    expect(res.status).toBe(204);
  } finally {
    await server.close();
    await clouds.close();
  }
  // its temporary data directory goes with it
  const dataDir = /data in (\S+) \(removed when it stops\)/.exec(lines.join("\n"))?.[1];
  expect(dataDir).toBeDefined();
  expect(existsSync(dataDir!)).toBe(false);
});

it("`credhook demo` listens on $PORT; a PORT that is not a port is a clear error", async () => {
  const free = async () => {
    const srv = createServer();
    await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
    const port = (srv.address() as AddressInfo).port;
    await new Promise((r) => srv.close(r));
    return port;
  };
  const port = await free();
  const child = spawnTracked(
    process.execPath,
    [fileURLToPath(new URL("../bin/credhook.mjs", import.meta.url)), "demo", "--no-walkthrough"],
    {
      env: { ...process.env, PORT: String(port), CREDHOOK_FROM_SOURCE: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let out = "";
  child.stdout!.on("data", (d) => (out += String(d)));
  child.stderr!.on("data", (d) => (out += String(d)));
  try {
    await new Promise<void>((resolve, reject) => {
      const t = setInterval(() => out.includes("The server keeps running") && (clearInterval(t), resolve()), 50);
      child.once("exit", (code) => (clearInterval(t), reject(new Error(`demo exited ${code}: ${out}`))));
    });
    expect(out).toContain(`credhook demo: http://127.0.0.1:${port} `);
    expect((await fetch(`http://127.0.0.1:${port}/livez`)).status).toBe(204);
  } finally {
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await exited;
  }
  const bad = spawnTracked(process.execPath, [fileURLToPath(new URL("../bin/credhook.mjs", import.meta.url)), "demo"], {
    env: { ...process.env, PORT: "http", CREDHOOK_FROM_SOURCE: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let err = "";
  bad.stderr!.on("data", (d) => (err += String(d)));
  expect(await new Promise((r) => bad.once("exit", r))).toBe(1);
  expect(err).toContain("the port must be an integer from 0 to 65535 (got 'http' from PORT)");
});

it("`credhook demo` next to a server on its port fails naming the port and --port/PORT, as serve does; it and a demo on a bad config leave no temporary directory", async () => {
  const taken = createServer();
  await new Promise<void>((r) => taken.listen(0, "0.0.0.0", r));
  const port = (taken.address() as AddressInfo).port;
  const badConfig = join(mkdtempSync(join(tmpdir(), "credhook-demo-config-")), "bad.yaml");
  writeFileSync(badConfig, "server: { port: eighty }\n");
  /** `credhook demo` with its own TMPDIR (where it makes its data directory): exit code, stderr, what it left there. */
  const demo = async (args: string[], env: Record<string, string>) => {
    const tmp = mkdtempSync(join(tmpdir(), "credhook-demo-tmp-"));
    const child = spawnTracked(
      process.execPath,
      [fileURLToPath(new URL("../bin/credhook.mjs", import.meta.url)), "demo", "--no-walkthrough", ...args],
      { env: { ...process.env, CREDHOOK_FROM_SOURCE: "1", TMPDIR: tmp, ...env }, stdio: ["ignore", "pipe", "pipe"] },
    );
    let err = "";
    child.stderr!.on("data", (d) => (err += String(d)));
    const code = await new Promise((r) => child.once("exit", r));
    return { code, err, left: readdirSync(tmp).filter((f) => f.startsWith("credhook-demo-")) };
  };
  try {
    const [busy, bad] = await Promise.all([demo([], { PORT: String(port) }), demo(["--config", badConfig], {})]);
    expect(busy.code).toBe(1);
    expect(busy.err).toContain(`port ${port} on 127.0.0.1, the webhook's port, is in use`);
    expect(busy.err).toContain("pass --port a free port (or set PORT to one), or 0 for any free one");
    expect(busy.err).not.toContain("EADDRINUSE");
    expect(busy.left).toEqual([]);
    expect(bad.code).toBe(1);
    expect(bad.err).toContain("server.port");
    expect(bad.left).toEqual([]);
  } finally {
    await new Promise((r) => taken.close(r));
  }
});
