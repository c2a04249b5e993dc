// The cloud fakes and the provider testkit are for tests and `credhook demo` only:
// no production package depends on them at run time, and no production source
// imports them, except the demo's dynamic import (run only by `credhook demo`).
import { describe, expect, it } from "vitest";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const PACKAGES = fileURLToPath(new URL("../..", import.meta.url));
/** Packages that exist for tests: they may depend on each other. */
const DEV_ONLY = new Set(["@credhook/fakes", "@credhook/provider-testkit"]);
const DEV_ONLY_IMPORT =
  /(?:from\s*|import\s*\(\s*|import\s+)["'](@credhook\/(?:fakes|provider-testkit))(?:\/[^"']*)?["']/g;

interface Manifest {
  name: string;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

const manifests = readdirSync(PACKAGES)
  .map((dir) => ({ dir, manifest: JSON.parse(readFileSync(join(PACKAGES, dir, "package.json"), "utf8")) as Manifest }))
  .filter(({ manifest }) => !DEV_ONLY.has(manifest.name));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.(ts|mts|js|mjs)$/.test(name) ? [path] : [];
  });
}

/** Every import of a dev-only package in a production package's src/ and bin/: `file: statement`. */
function devOnlyImports(): string[] {
  const found: string[] = [];
  for (const { dir } of manifests) {
    for (const sub of ["src", "bin"]) {
      let files: string[] = [];
      try {
        files = sourceFiles(join(PACKAGES, dir, sub));
      } catch {
        continue;
      }
      for (const file of files) {
        const text = readFileSync(file, "utf8");
        for (const line of text.split("\n")) {
          DEV_ONLY_IMPORT.lastIndex = 0;
          if (DEV_ONLY_IMPORT.test(line)) found.push(`${relative(PACKAGES, file)}: ${line.trim()}`);
        }
      }
    }
  }
  return found;
}

describe("test fakes stay out of production", () => {
  it("the scan finds the packages it checks", () => {
    expect(manifests.map((m) => m.manifest.name)).toEqual(
      expect.arrayContaining(["@credhook/core", "@credhook/provider-aws", "@credhook/server"]),
    );
  });

  it("no production package depends at run time on @credhook/fakes or @credhook/provider-testkit", () => {
    const offending = manifests.flatMap(({ manifest }) =>
      [manifest.dependencies, manifest.peerDependencies, manifest.optionalDependencies].flatMap((deps) =>
        Object.keys(deps ?? {})
          .filter((d) => DEV_ONLY.has(d))
          .map((d) => `${manifest.name} -> ${d}`),
      ),
    );
    expect(offending).toEqual([]);
  });

  it("no production source imports a fake or the testkit, except type imports and the demo's dynamic import", () => {
    const allowed = (entry: string) =>
      /^\s*\S+: import type /.test(entry) || (entry.startsWith("server/src/demo.ts:") && entry.includes("import("));
    const imports = devOnlyImports();
    expect(imports.filter((e) => !allowed(e))).toEqual([]);
    // the demo still loads the five fakes, and only dynamically
    expect(imports.filter((e) => e.startsWith("server/src/demo.ts:") && e.includes("import(")).join("\n")).toMatch(
      /fakes\/aws[\s\S]*fakes\/azure[\s\S]*fakes\/gcp[\s\S]*fakes\/kong[\s\S]*fakes\/apigee/,
    );
  });
});
