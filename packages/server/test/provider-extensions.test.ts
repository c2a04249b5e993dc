// The host asks, never inspects: what a provider package contributes besides credentials (the
// embedded gateway) reaches the server through core's ProviderExtension, found by the registry —
// never through `instanceof` of a provider's class.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  type CredhookConfig,
  type ExtensionCheckContext,
  type ExtensionContext,
  type Gateway,
  loadExtensions,
  type ProviderExtension,
  type RunningExtension,
} from "@credhook/core";
import localFactory from "@credhook/provider-local";
import { bundledModules } from "../src/modules.js";
import { AUTH, LOCAL_YAML, startTestServer, type TestServer } from "./helpers.js";

const PACKAGES = fileURLToPath(new URL("../../", import.meta.url));
const FAULTY = fileURLToPath(new URL("./fixtures/faulty-provider.ts", import.meta.url));

/** Every `.ts` file under `dir`, recursively. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [],
  );
}

/** Every class a provider package defines (its `src/`), by name. */
function providerClasses(): Set<string> {
  const names = new Set<string>();
  for (const pkg of readdirSync(PACKAGES)) {
    if (!pkg.startsWith("provider-") || pkg === "provider-testkit") continue;
    for (const file of sources(join(PACKAGES, pkg, "src")))
      for (const m of readFileSync(file, "utf8").matchAll(/\bclass\s+([A-Za-z_$][\w$]*)/g)) names.add(m[1]!);
  }
  return names;
}

/** `file: instanceof Name` for each `instanceof` of a provider class, or of a name imported from a provider package, in `text`. */
function providerInstanceofs(file: string, text: string, classes: Set<string>): string[] {
  const imported = new Set<string>();
  for (const m of text.matchAll(/import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+"@credhook\/provider-[^"]+"/g))
    for (const name of m[1]!.split(",")) imported.add(name.replace(/\btype\b|\bas\b.*$/g, "").trim());
  for (const m of text.matchAll(/import\s+([A-Za-z_$][\w$]*)\s+from\s+"@credhook\/provider-[^"]+"/g))
    imported.add(m[1]!);
  return [...text.matchAll(/\binstanceof\s+([A-Za-z_$][\w$]*)/g)]
    .filter((m) => classes.has(m[1]!) || imported.has(m[1]!))
    .map((m) => `${file}: instanceof ${m[1]}`);
}

describe("the server never inspects a provider's class", () => {
  const classes = providerClasses();

  it("finds the provider classes it guards against (LocalProvider, EmbeddedGateway among them)", () => {
    expect(classes).toContain("LocalProvider");
    expect(classes).toContain("EmbeddedGateway");
  });

  it("flags `instanceof` of a provider class, or of anything imported from a provider package", () => {
    expect(providerInstanceofs("a.ts", "if (p instanceof LocalProvider) {}", classes)).toEqual([
      "a.ts: instanceof LocalProvider",
    ]);
    const aliased =
      'import { Thing as Other } from "@credhook/provider-kong";\nimport Dflt from "@credhook/provider-aws";\n';
    expect(providerInstanceofs("b.ts", `${aliased}x instanceof Thing; y instanceof Dflt;`, classes)).toEqual([
      "b.ts: instanceof Thing",
      "b.ts: instanceof Dflt",
    ]);
    expect(providerInstanceofs("c.ts", "err instanceof ConfigError", classes)).toEqual([]);
  });

  it("no file of packages/server/src has one", () => {
    const src = join(PACKAGES, "server", "src");
    const found = sources(src).flatMap((f) =>
      providerInstanceofs(f.slice(src.length + 1), readFileSync(f, "utf8"), classes),
    );
    expect(found).toEqual([]);
  });
});

/** What the recording extension saw. */
const seen = {
  parsed: [] as Array<{ raw: unknown; at: string }>,
  checked: [] as ExtensionCheckContext[],
  started: [] as ExtensionContext[],
  served: [] as Array<{ port: number; url: string }>,
  closed: [] as number[],
};

/** An extension for `embeddedGateway:` that records how the server drives it, and answers on its mount. */
const recording: ProviderExtension<{ block: unknown }> = {
  configKey: "embeddedGateway",
  parseConfig(raw, at) {
    seen.parsed.push({ raw, at });
    return { block: raw };
  },
  problems(_config, context) {
    seen.checked.push(context);
    return [];
  },
  async start(_config, context): Promise<RunningExtension> {
    seen.started.push(context);
    return {
      mount: {
        path: "/ext",
        handler: (req, res) => {
          context.observe?.("hello", 200);
          res.setHeader("content-type", "text/plain");
          res.end(`ext saw ${req.url}`);
        },
        aliases: { "/.well-known/ext-meta/ext": "/meta" },
      },
      async serve(webhook) {
        seen.served.push(webhook);
        return `${webhook.url}/ext`;
      },
      describe: () => ({ issuer: "urn:ext" }),
      async close(timeoutMs) {
        seen.closed.push(timeoutMs);
      },
    };
  },
};

describe("a provider package's extension, through the registry and the server's public interface", () => {
  let s: TestServer;
  beforeAll(async () => {
    // provider-local's package, its extension replaced by the recording one: the server finds it by the registry alone.
    bundledModules.set("@credhook/provider-local", async () => ({
      default: { ...localFactory, extension: recording },
    }));
    s = await startTestServer(
      `${LOCAL_YAML.replace(
        "routes:\n",
        `  faulty: { provider: ${FAULTY}, credentialType: API_KEY, options: { label: ext } }\nroutes:\n  - { apis: [slow], gateway: faulty }\n`,
      )}embeddedGateway:\n  pathPrefix: /ext\n  limits: { counters: memory }\n`,
    );
  });
  afterAll(async () => {
    await s?.close();
    bundledModules.delete("@credhook/provider-local");
  });

  it("parses the block once per start, under its YAML path, and checks it against its own package's gateways only", () => {
    expect(seen.parsed).toHaveLength(1);
    expect(seen.parsed[0]!.at).toBe("embeddedGateway");
    expect(seen.parsed[0]!.raw).toMatchObject({ pathPrefix: "/ext", limits: { counters: "memory" } });
    expect(seen.checked).toHaveLength(1);
    expect(seen.checked[0]!.providers.map((p) => p.gateway)).toEqual(["local", "local-m2m"]);
    expect(seen.checked[0]!.sharedStore).toBe(false);
    expect(Object.keys(seen.checked[0]!.store)).toEqual(["sqlite"]);
  });

  it("starts it with the store's state and the data directory, and lets it serve once the webhook listens", () => {
    expect(seen.started).toHaveLength(1);
    const context = seen.started[0]!;
    expect(context.dataDir).toBe(s.dir);
    expect(typeof context.stateFor("@ext").get).toBe("function");
    expect(seen.served).toEqual([{ port: s.port, url: s.url }]);
    expect(s.gatewayUrl).toBe(`${s.url}/ext`);
    expect(s.extensionUrls.get("embeddedGateway")).toBe(`${s.url}/ext`);
    expect(s.credhook.extensions.get("embeddedGateway")!.describe!()).toEqual({ issuer: "urn:ext" });
  });

  it("mounts its handler under its path and its aliases outside the webhook's Basic auth; the webhook keeps its auth", async () => {
    const mounted = await fetch(`${s.url}/ext/some/path?q=1`);
    expect(mounted.status).toBe(200);
    expect(await mounted.text()).toBe("ext saw /some/path?q=1");
    const alias = await fetch(`${s.url}/.well-known/ext-meta/ext`);
    expect(await alias.text()).toBe("ext saw /meta");
    expect((await fetch(`${s.url}/v1/health`)).status).toBe(401);
    expect((await fetch(`${s.url}/v1/health`, { headers: { authorization: AUTH } })).status).toBe(204);
    expect(await (await fetch(`${s.url}/metrics`, { headers: { authorization: AUTH } })).text()).toMatch(
      /endpoint="hello",status="200"/,
    );
  });

  it("closes it once when the server closes, with server.shutdownTimeoutMs", async () => {
    expect(seen.closed).toEqual([]);
    await s.close();
    expect(seen.closed).toEqual([10_000]);
  });
});

describe("core's loadExtensions", () => {
  const config = (extra: object) =>
    ({ store: { sqlite: ":memory:" }, gateways: {}, routes: [], ...extra }) as unknown as CredhookConfig;
  const gateway = (name: string, providerType: string) =>
    ({ name, providerType, credentialType: "API_KEY", provider: {} }) as unknown as Gateway;
  const imports: string[] = [];
  const importModule = (factory: object) => async (specifier: string) => {
    imports.push(specifier);
    return { default: factory };
  };

  it("loads nothing when the block is absent", async () => {
    imports.length = 0;
    const out = await loadExtensions(config({}), new Map(), { importModule: importModule(localFactory) });
    expect(out).toEqual({ extensions: [], problems: [], warnings: [] });
    expect(imports).toEqual([]);
  });

  it("hands the extension the gateways of its own package, by short name or package name, and collects its problems and warnings", async () => {
    const gateways = new Map([
      ["a", gateway("a", "local")],
      ["b", gateway("b", "@credhook/provider-local")],
      ["c", gateway("c", "aws")],
    ]);
    const ext: ProviderExtension<string> = {
      configKey: "embeddedGateway",
      parseConfig: (raw) => JSON.stringify(raw),
      problems: (parsed, context) => [`${parsed} over ${context.providers.map((p) => p.gateway).join(",")}`],
      warnings: (parsed, context) => [`${parsed} shared=${context.sharedStore} store=${Object.keys(context.store)}`],
      start: async () => ({ close: async () => undefined }),
    };
    const out = await loadExtensions(config({ embeddedGateway: { x: 1 } }), gateways, {
      importModule: importModule({ ...localFactory, extension: ext }),
      sharedStore: true,
    });
    expect(out.problems).toEqual(['{"x":1} over a,b']);
    expect(out.warnings).toEqual(['{"x":1} shared=true store=sqlite']);
    expect(out.extensions.map((e) => [e.configKey, e.providerType, e.config])).toEqual([
      ["embeddedGateway", "local", '{"x":1}'],
    ]);
  });

  it("refuses a block whose package contributes no extension for it", async () => {
    const { extension: _, ...bare } = localFactory;
    await expect(
      loadExtensions(config({ embeddedGateway: {} }), new Map(), { importModule: importModule(bare) }),
    ).rejects.toMatchObject({
      messages: ["embeddedGateway: provider package '@credhook/provider-local' contributes no embeddedGateway"],
    });
  });
});
