/**
 * The repository is self-contained: every relative link of its Markdown files and every
 * document or path reference in Markdown text, source comments and YAML resolves inside it
 * (scripts/doc-links.ts). A fixture repository shows that the check fails on each kind of
 * dangling reference and passes what resolves.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { findDanglingReferences, repositoryFiles } from "../../../scripts/doc-links.js";

const REPO = fileURLToPath(new URL("../../..", import.meta.url));

/**
 * Known dangling references awaiting a change on another branch (none now). An entry that no
 * longer matches fails the test, so an entry is removed as soon as its fix lands.
 */
const PENDING: Array<{ file: string; reference: string }> = [];

describe("the repository's documentation references", () => {
  it("all resolve inside the repository", () => {
    const dangling = findDanglingReferences(REPO, repositoryFiles(REPO));
    const pending = (d: { file: string; reference: string }) =>
      PENDING.some((p) => p.file === d.file && p.reference === d.reference);
    expect(dangling.filter((d) => !pending(d)).map((d) => `${d.file}:${d.line} ${d.reference} (${d.reason})`)).toEqual(
      [],
    );
    // A pending entry that no longer dangles is stale: remove it.
    expect(PENDING.filter((p) => !dangling.some((d) => d.file === p.file && d.reference === p.reference))).toEqual([]);
  });

  it("covers the repository's Markdown, sources and YAML but not node_modules", () => {
    const files = repositoryFiles(REPO);
    expect(files).toContain("CONTRIBUTING.md");
    expect(files).toContain("docs/architecture.md");
    expect(files).toContain("packages/core/src/provider.ts");
    expect(files).toContain("packages/core/openapi/credential-webhook.openapi.yaml");
    expect(files.some((f) => f.includes("node_modules/") || f.startsWith(".git/"))).toBe(false);
  });

  it("leaves out folders a .gitignore folder pattern with `*` names, wherever they are (a test's scratch folder)", () => {
    const root = mkdtempSync(join(tmpdir(), "credhook-doc-links-glob-"));
    try {
      writeFileSync(join(root, ".gitignore"), "node_modules/\n.scratch-*/\n");
      for (const dir of ["a/.scratch-x1", "a/.scratchy", "b"]) mkdirSync(join(root, dir), { recursive: true });
      for (const file of ["a/.scratch-x1/gen.ts", "a/.scratchy/kept.ts", "b/kept.md"])
        writeFileSync(join(root, file), "// see gone.md\n");
      expect(repositoryFiles(root)).toEqual([".gitignore", "a/.scratchy/kept.ts", "b/kept.md"]);
      // A path through an ignored folder is a build's output, not a missing file; any other missing path dangles.
      writeFileSync(join(root, "b/build.md"), "The build writes `b/.scratch-out/index.html` and `b/out/index.html`.\n");
      expect(findDanglingReferences(root, ["b/build.md"]).map((d) => d.reference)).toEqual(["b/out/index.html"]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("the check on a fixture repository", () => {
  const root = mkdtempSync(join(tmpdir(), "credhook-doc-links-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  };
  write(".gitignore", "node_modules/\n/packs/\n");
  write("package.json", "{}\n");
  write(
    "README.md",
    [
      "# Fixture",
      "",
      "## Set-up steps",
      "",
      "See [the guide](docs/guide.md), [its part](docs/guide.md#the-part), [here](#set-up-steps), [the site](https://example.com/x.md).",
      "A [dangling link](docs/missing.md) and [a wrong heading](docs/guide.md#no-such-part) and [outside](../outside.md).",
      "The contract is in `shared/spec/contract.md`; the code in `packages/core/src/a.ts` and `packages/core/src/gone.ts`.",
      "A family of files: `packages/<name>/README.md`, `docs/*.md`.",
      "",
      "```sh",
      "cat design.md packages/core/src/gone.ts",
      "```",
      "",
    ].join("\n"),
  );
  write("docs/guide.md", "# Guide\n\n## The part\n\nBack to the [README](../README.md).\n");
  write(
    "packages/core/src/a.ts",
    [
      "/**",
      ' * The rules (docs/guide.md, "The part"); the design (design.md); packages/core/src/gone.ts.',
      " * Online: https://example.com/design.md",
      " */",
      'export const text = "design.md is a string, not a comment";',
      "// See cloud-facts.md.",
      "export const re = /a\\/b.md/;",
      "",
    ].join("\n"),
  );
  write(
    "packages/core/README.md",
    "# core\n\nSee [the guide](../../docs/guide.md) and [a sibling](../../packages/nope/README.md).\n",
  );
  write("packages/core/api.yaml", "info:\n  description: The contract of `shared/spec/contract.md`.\n");
  write("node_modules/dep/README.md", "[broken](nowhere.md)\n");
  write("packs/x.md", "[broken](nowhere.md)\n");

  it("lists each dangling reference with its file, line and reason, and nothing that resolves", () => {
    const found = findDanglingReferences(root, repositoryFiles(root)).map(
      (d) => `${d.file}:${d.line} ${d.reference} — ${d.reason}`,
    );
    expect(found.sort()).toEqual(
      [
        "README.md:6 docs/missing.md — no such file or folder in the repository",
        "README.md:6 docs/guide.md#no-such-part — no heading #no-such-part in guide.md",
        "README.md:6 ../outside.md — no such file or folder in the repository",
        "README.md:7 shared/spec/contract.md — no such file or folder in the repository",
        "README.md:7 packages/core/src/gone.ts — no such file or folder in the repository",
        "packages/core/README.md:3 ../../packages/nope/README.md — no such file or folder in the repository",
        "packages/core/api.yaml:2 shared/spec/contract.md — no such file or folder in the repository",
        "packages/core/src/a.ts:2 design.md — no such file or folder in the repository",
        "packages/core/src/a.ts:2 packages/core/src/gone.ts — no such file or folder in the repository",
        "packages/core/src/a.ts:6 cloud-facts.md — no such file or folder in the repository",
      ].sort(),
    );
  });

  it("passes once the references are fixed", () => {
    write("docs/missing.md", "# Missing\n");
    write("shared/spec/contract.md", "# Contract\n");
    write("design.md", "# Design\n");
    write("cloud-facts.md", "# Facts\n");
    write("packages/core/src/gone.ts", "export {};\n");
    write("packages/nope/README.md", "# nope\n");
    write("docs/guide.md", "# Guide\n\n## The part\n\n## No such part\n\nBack to the [README](../README.md).\n");
    const left = findDanglingReferences(root, repositoryFiles(root)).map((d) => `${d.file}:${d.line} ${d.reference}`);
    expect(left).toEqual(["README.md:6 ../outside.md"]);
  });
});
