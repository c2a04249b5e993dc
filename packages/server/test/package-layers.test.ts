// The packages' layers (issue 33): server → {gateway, core, the built-in providers and stores},
// gateway → {core, provider-local's public entry}, providers and stores → core — no plugin registry
// between them. Each package's sources import only the @credhook packages its package.json
// depends on, through their exported entry points; and the server never inspects a provider's class.
// (No import cycle in any package, and no import of a higher layer: packages/core/test/import-graph.test.ts.)
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const PACKAGES = fileURLToPath(new URL("../../", import.meta.url));

interface Manifest {
  name: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  exports?: Record<string, unknown>;
}

/** Every workspace package's manifest, by folder name. */
const manifests = new Map<string, Manifest>(
  readdirSync(PACKAGES).map((dir) => [dir, JSON.parse(readFileSync(join(PACKAGES, dir, "package.json"), "utf8"))]),
);

/** Every `.ts` file under `dir`, recursively. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts"))
    .map((e) => join(e.parentPath, e.name));
}

/** The module specifiers `text` imports or re-exports (static, `import type`, dynamic `import("…")`), comments left out. */
function specifiers(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  return [...code.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|^import\s+)"([^"]+)"/gm)].map((m) => m[1]!);
}

/** The runtime `@credhook/*` dependencies of the package in folder `dir`. */
const credhookDependencies = (dir: string) =>
  Object.keys(manifests.get(dir)!.dependencies ?? {})
    .filter((d) => d.startsWith("@credhook/"))
    .sort();

describe("the packages' layers", () => {
  it("dependencies point server → {gateway, core, providers, stores}, gateway → {core, provider-local}, providers and stores → core", () => {
    const providers = [...manifests.keys()].filter((d) => d.startsWith("provider-") && d !== "provider-testkit");
    expect(credhookDependencies("core")).toEqual([]);
    for (const dir of [...providers, "store-sqlite", "store-postgres", "provider-testkit"])
      expect(credhookDependencies(dir), dir).toEqual(["@credhook/core"]);
    expect(credhookDependencies("gateway")).toEqual(["@credhook/core", "@credhook/provider-local"]);
    expect(credhookDependencies("server")).toEqual(
      [
        "@credhook/core",
        "@credhook/gateway",
        "@credhook/store-postgres",
        "@credhook/store-sqlite",
        ...providers.map((d) => `@credhook/${d}`),
      ].sort(),
    );
  });

  it("each package's sources import only the @credhook packages it declares, through their exported entry points", () => {
    const entries = new Set(
      [...manifests.values()].flatMap((m) => Object.keys(m.exports ?? {}).map((sub) => m.name + sub.slice(1))),
    );
    const offenders: string[] = [];
    for (const [dir, manifest] of manifests) {
      // the demo (server/src/demo.ts) loads the development-only cloud fakes, a devDependency
      const allowed = new Set([
        manifest.name,
        ...Object.keys({ ...manifest.dependencies, ...manifest.devDependencies }),
      ]);
      for (const file of sources(join(PACKAGES, dir, "src"))) {
        for (const s of specifiers(readFileSync(file, "utf8")).filter((x) => x.startsWith("@credhook/"))) {
          const pkg = s.split("/").slice(0, 2).join("/");
          if (!allowed.has(pkg) || !entries.has(s)) offenders.push(`${file.slice(PACKAGES.length)}: ${s}`);
        }
      }
    }
    expect(offenders).toEqual([]);
  });
});

/** Every class a provider package defines (its `src/`), by name. */
function providerClasses(): Set<string> {
  const names = new Set<string>();
  for (const dir of manifests.keys()) {
    if (!dir.startsWith("provider-") || dir === "provider-testkit") continue;
    for (const file of sources(join(PACKAGES, dir, "src")))
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

describe("the server and the embedded gateway never inspect a provider's class", () => {
  const classes = providerClasses();

  it("finds the provider classes it guards against (LocalProvider among them)", () => {
    expect(classes).toContain("LocalProvider");
    expect(classes).toContain("KongProvider");
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

  it("no file of packages/server/src or packages/gateway/src has one: the gateway asks provider-local's localCredentialReader", () => {
    const found = ["server", "gateway"].flatMap((dir) => {
      const src = join(PACKAGES, dir, "src");
      return sources(src).flatMap((f) =>
        providerInstanceofs(`${dir}/${f.slice(src.length + 1)}`, readFileSync(f, "utf8"), classes),
      );
    });
    expect(found).toEqual([]);
  });
});
