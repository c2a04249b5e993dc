/**
 * The workspace's import graph (issue 33): no module of a package's `src/` takes part in an import cycle — type-only
 * imports, `export … from`, `import("…")` and `import("…").Type` included, since each is a module that must be read
 * to understand the other — and no package imports one of a higher layer (server → core ← providers, stores,
 * testkit; core imports no other credhook package). TypeScript's own `ts.preProcessFile` lists each file's imports;
 * relative specifiers resolve to the `.ts` file (or folder `index.ts`) and `@credhook/<package>[/<entry>]` to the
 * entry point's `dev-source` file in that package's `package.json` "exports", as the tests and `credhook` from
 * source resolve it.
 *
 * Packages that still have cycles are listed in {@link KNOWN_CYCLES} with the files of their cycles: the test fails
 * when a package has a cycle it does not list, and when a listed cycle changed or is gone, so the list only shrinks.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const PACKAGES = join(ROOT, "packages");

/**
 * Packages whose `src/` still has import cycles, with every file (relative to the package) that is part of one.
 * Remove a package's entry once its cycles are gone; the test says when an entry no longer matches.
 */
const KNOWN_CYCLES: Record<string, string[]> = {};

/**
 * The layers, lowest first: a package may import packages of a lower layer only (never its own layer's others: a
 * provider never imports another provider, nor a store). `fakes` (development only) builds its cloud fakes on the
 * testkit's fake-server helpers; the server starts them for `credhook demo`.
 */
const LAYERS: ReadonlyArray<(pkg: string) => boolean> = [
  (p) => p === "core",
  (p) => p.startsWith("provider-") || p.startsWith("store-"),
  // the embedded gateway reads local credentials through provider-local's public reader
  (p) => p === "gateway",
  (p) => p === "fakes",
  (p) => p === "server",
];

/** A module's imports as `ts.preProcessFile` reads them: every specifier, type-only and dynamic ones included. */
function specifiersOf(source: string): string[] {
  return ts.preProcessFile(source, true, false).importedFiles.map((f) => f.fileName);
}

/** What an import graph is built from: the source files, and how to read a file and a package's `exports`. */
interface Workspace {
  /** Absolute paths of the `.ts` files of every package's `src/`. */
  files: string[];
  read(path: string): string;
  exists(path: string): boolean;
  /** The `dev-source` file (absolute) of `@credhook/<pkg><subpath>` (`subpath` `.` or `./entry`), or undefined when not exported. */
  entry(pkg: string, subpath: string): string | undefined;
}

/** The import graph: each file's imports of workspace files (absolute paths), and the specifiers that resolve nowhere. */
interface ImportGraph {
  edges: Map<string, string[]>;
  unresolved: string[];
}

/** The package (its folder name under `packages/`) a file belongs to. */
function packageOf(file: string): string {
  return relative(PACKAGES, file).split(/[\\/]/)[0]!;
}

/** Builds the import graph of `ws`: relative specifiers and `@credhook/*` ones; other packages' imports are left out. */
function importGraph(ws: Workspace): ImportGraph {
  const edges = new Map<string, string[]>();
  const unresolved: string[] = [];
  for (const file of ws.files) {
    const out: string[] = [];
    for (const spec of specifiersOf(ws.read(file))) {
      let target: string | undefined;
      if (spec.startsWith(".")) {
        const base = resolve(dirname(file), spec);
        target = [base.replace(/\.js$/, ".ts"), `${base}.ts`, join(base, "index.ts")].find((p) => ws.exists(p));
      } else if (spec.startsWith("@credhook/")) {
        const [, pkg, ...rest] = spec.split("/");
        target = ws.entry(pkg!, rest.length > 0 ? `./${rest.join("/")}` : ".");
      } else continue; // node: builtins and third-party packages
      if (target) out.push(target);
      else unresolved.push(`${relative(ROOT, file)}: ${spec}`);
    }
    edges.set(file, out);
  }
  return { edges, unresolved };
}

/**
 * The strongly connected components of more than one file (or a file importing itself): each is a set of modules
 * that import each other, directly or through the others (Tarjan's algorithm).
 * @returns each component's files, sorted, with one concrete cycle through its first file
 */
function cyclesOf(edges: Map<string, string[]>): Array<{ files: string[]; cycle: string[] }> {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const connect = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (edges.get(v) ?? []).includes(v)) components.push(component.sort());
  };
  for (const v of edges.keys()) if (!index.has(v)) connect(v);
  return components.map((files) => ({ files, cycle: cycleThrough(files[0]!, new Set(files), edges) }));
}

/** The shortest import path from `start` back to itself inside `component` (breadth first), `start` at both ends. */
function cycleThrough(start: string, component: Set<string>, edges: Map<string, string[]>): string[] {
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift()!;
    for (const w of edges.get(v) ?? []) {
      if (!component.has(w)) continue;
      if (w === start) {
        const path = [v];
        while (path[0] !== start) path.unshift(previous.get(path[0]!)!);
        return [...path, start];
      }
      if (previous.has(w)) continue;
      previous.set(w, v);
      queue.push(w);
    }
  }
  return [start];
}

/** The imports of another package that its layer does not allow, as `file: imports <package>` lines. */
function layerViolations(edges: Map<string, string[]>): string[] {
  const layerOf = (pkg: string) => LAYERS.findIndex((inLayer) => inLayer(pkg));
  const out: string[] = [];
  for (const [file, targets] of edges) {
    const from = packageOf(file);
    for (const target of targets) {
      const to = packageOf(target);
      if (to !== from && !(layerOf(to) < layerOf(from)))
        out.push(
          `${relative(ROOT, file)}: imports ${to} (layer ${layerOf(to)}), but ${from} is layer ${layerOf(from)}`,
        );
    }
  }
  return out;
}

/** The workspace on disk: every package's `src/**\/*.ts` (declaration files left out). */
function diskWorkspace(): Workspace {
  const files = readdirSync(PACKAGES, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(PACKAGES, d.name, "src")))
    .flatMap((d) =>
      readdirSync(join(PACKAGES, d.name, "src"), { recursive: true, withFileTypes: true })
        .filter((f) => f.isFile() && f.name.endsWith(".ts") && !f.name.endsWith(".d.ts"))
        .map((f) => join(f.parentPath, f.name)),
    );
  return {
    files,
    read: (path) => readFileSync(path, "utf8"),
    exists: existsSync,
    entry(pkg, subpath) {
      const manifest = join(PACKAGES, pkg, "package.json");
      if (!existsSync(manifest)) return undefined;
      const exported = (JSON.parse(readFileSync(manifest, "utf8")) as { exports?: Record<string, unknown> }).exports?.[
        subpath
      ];
      const source = (exported as { "dev-source"?: string } | undefined)?.["dev-source"];
      return source ? join(PACKAGES, pkg, source) : undefined;
    },
  };
}

/** An in-memory workspace of `files` (path relative to `packages/` → source) whose packages export `./src/index.ts`. */
function memoryWorkspace(files: Record<string, string>): Workspace {
  const abs = new Map(Object.entries(files).map(([p, s]) => [join(PACKAGES, p), s]));
  return {
    files: [...abs.keys()],
    read: (path) => abs.get(path)!,
    exists: (path) => abs.has(path),
    entry: (pkg, subpath) => (subpath === "." ? join(PACKAGES, pkg, "src/index.ts") : undefined),
  };
}

const rel = (file: string) => relative(ROOT, file);

describe("the import graph finds what it must", () => {
  it("a cycle through a type-only import, an `export … from`, an `import()` type and a folder's index.ts", () => {
    const graph = importGraph(
      memoryWorkspace({
        "core/src/a.ts": 'import type { B } from "./b.js";\nexport const a = 1;',
        "core/src/b.ts": 'export * from "./c/index.js";\nexport type B = import("./c").C;',
        "core/src/c/index.ts": 'export { a } from "../a.js";\nexport type C = number;',
        "core/src/d.ts": 'const e = await import("./e.js");\nimport "node:fs";\nimport "uuid";',
        "core/src/e.ts": "export const e = 1;",
      }),
    );
    expect(graph.unresolved).toEqual([]);
    const cycles = cyclesOf(graph.edges);
    expect(cycles.map((c) => c.files.map(rel))).toEqual([
      ["packages/core/src/a.ts", "packages/core/src/b.ts", "packages/core/src/c/index.ts"],
    ]);
    expect(cycles[0]!.cycle.map(rel)).toEqual([
      "packages/core/src/a.ts",
      "packages/core/src/b.ts",
      "packages/core/src/c/index.ts",
      "packages/core/src/a.ts",
    ]);
  });

  it("a cycle across packages, an import of a higher layer, and a specifier that resolves nowhere", () => {
    const graph = importGraph(
      memoryWorkspace({
        "core/src/index.ts": 'import type { X } from "@credhook/provider-kong";\nexport type Y = X;',
        "provider-kong/src/index.ts": 'import type { Y } from "@credhook/core";\nimport "@credhook/core/nope";',
        "store-sqlite/src/index.ts": 'import "@credhook/provider-kong";\nimport "./missing.js";',
      }),
    );
    expect(graph.unresolved).toEqual([
      "packages/provider-kong/src/index.ts: @credhook/core/nope",
      "packages/store-sqlite/src/index.ts: ./missing.js",
    ]);
    expect(cyclesOf(graph.edges).map((c) => c.files.map(rel))).toEqual([
      ["packages/core/src/index.ts", "packages/provider-kong/src/index.ts"],
    ]);
    expect(layerViolations(graph.edges)).toEqual([
      "packages/core/src/index.ts: imports provider-kong (layer 1), but core is layer 0",
      "packages/store-sqlite/src/index.ts: imports provider-kong (layer 1), but store-sqlite is layer 1",
    ]);
  });
});

describe("the workspace's import graph", () => {
  const graph = importGraph(diskWorkspace());

  it("reads every package's sources, and every relative and @credhook/* import resolves to a file", () => {
    expect(graph.edges.size).toBeGreaterThan(150);
    for (const pkg of ["core", "provider-testkit", "server", "provider-local"])
      expect([...graph.edges.keys()].some((f) => packageOf(f) === pkg)).toBe(true);
    expect(graph.unresolved).toEqual([]);
  });

  it("has no import cycle, type-only imports included, beyond the known ones (KNOWN_CYCLES)", () => {
    const cycles = cyclesOf(graph.edges);
    const problems: string[] = [];
    const packages = new Set([...cycles.flatMap((c) => c.files.map(packageOf)), ...Object.keys(KNOWN_CYCLES)]);
    for (const pkg of [...packages].sort()) {
      const mine = cycles.filter((c) => c.files.some((f) => packageOf(f) === pkg));
      const files = mine.flatMap((c) =>
        c.files.filter((f) => packageOf(f) === pkg).map((f) => relative(join(PACKAGES, pkg), f)),
      );
      const known = KNOWN_CYCLES[pkg] ?? [];
      if (JSON.stringify(files.sort()) === JSON.stringify([...known].sort())) continue;
      if (known.length === 0)
        problems.push(
          ...mine.map(
            (c) => `${pkg}: import cycle ${c.cycle.map(rel).join(" → ")} (files: ${c.files.map(rel).join(", ")})`,
          ),
        );
      else if (files.length === 0) problems.push(`${pkg}: no cycle any more — remove its entry from KNOWN_CYCLES`);
      else
        problems.push(
          `${pkg}: its cycles' files are now ${JSON.stringify(files)}, KNOWN_CYCLES lists ${JSON.stringify(known)} — a new cycle (${mine.map((c) => c.cycle.map(rel).join(" → ")).join("; ")}), or a smaller list to write down`,
        );
    }
    expect(problems).toEqual([]);
  });

  it("core and the testkit have no cycle at all (not even a known one)", () => {
    const cyclic = cyclesOf(graph.edges).flatMap((c) => c.files.map(rel));
    expect(cyclic.filter((f) => /^packages\/(core|provider-testkit)\//.test(f))).toEqual([]);
    expect(KNOWN_CYCLES.core).toBeUndefined();
    expect(KNOWN_CYCLES["provider-testkit"]).toBeUndefined();
  });

  it("no package imports one of a higher layer: server → core ← providers, stores, testkit; core imports no other", () => {
    expect(layerViolations(graph.edges)).toEqual([]);
    const coreImports = [...graph.edges]
      .filter(([f]) => packageOf(f) === "core")
      .flatMap(([, targets]) => targets.map(packageOf));
    expect(coreImports.every((p) => p === "core")).toBe(true);
  });
});
