/**
 * The repository is self-contained: every relative link of its Markdown files and every
 * document or path reference in Markdown text, source comments and YAML resolves inside it
 * (scripts/doc-links.ts). A fixture repository shows that the check fails on each kind of
 * dangling reference and passes what resolves. A fixture docs site shows the same of the built
 * site's check (every link a plain static server would serve), which `pnpm docs:build` runs.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import {
  copyLinkedRepositoryFiles,
  findBrokenSiteLinks,
  findDanglingReferences,
  repositoryFiles,
} from "../../../scripts/doc-links.js";
import { fixtureTree } from "./fixture-tree.js";

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
    // A synchronous read of every file of the repository: a few seconds here, 32 s once under `pnpm test:stress`
    // (a CPU hog per core) on a slow CI run, past vitest's 30 s default.
  }, 120_000);

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
  const { root, write, remove } = fixtureTree("credhook-doc-links-");
  afterAll(remove);
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

describe("the built docs site's check", () => {
  const { root, write, remove } = fixtureTree("credhook-site-links-");
  afterAll(remove);
  const dist = join(root, "docs/.vitepress/dist");
  // A repository with a built site inside it (a .gitignore'd dist/, as VitePress writes it).
  write(".gitignore", "node_modules/\ndist/\n");
  write("deploy/dashboard.json", "{}\n");
  write("Dockerfile", "FROM node\n");
  write("node_modules/dep/data.json", "{}\n");
  write("docs/.vitepress/dist/assets/app.js", "");
  write("docs/.vitepress/dist/guide/index.html", "<h1>Guide</h1>");
  write(
    "docs/.vitepress/dist/index.html",
    [
      '<link rel="modulepreload" href="/assets/app.js"><script src="/assets/app.js"></script>',
      '<link rel="stylesheet" href="/assets/gone.css">',
      '<a href="/docs/a.html">a</a> <a href="docs/a.html#the-part">its part</a> <a href="./">home</a>',
      '<a href="/docs/a">a, as a clean URL</a> <a href="docs/a.html#no-such-part">a wrong heading</a>',
      '<a href="guide/">a folder with an index</a> <a href="guide">the same, no slash</a> <a href="docs/">a folder without</a>',
      '<a href="https://example.com/x.html">elsewhere</a> <a href="mailto:ops@example.com">mail</a> <a href="//cdn.example.com/x.js">cdn</a>',
      '<h2 id="top">Top</h2><a href="#top">up</a> <a href="#bottom">down</a> <a href="?q=1&amp;r=2#top">a query</a>',
      '<pre><code>&lt;a href="/only/in/text.html"&gt;</code></pre>',
    ].join("\n"),
  );
  write(
    "docs/.vitepress/dist/docs/a.html",
    [
      '<h2 id="the-part">The part</h2><a name="legacy"></a><a href="./a.html#legacy">an a name</a>',
      '<a href="../deploy/dashboard.json">the dashboard</a> <a href="../Dockerfile" download="">the Dockerfile</a>',
      '<a href="../node_modules/dep/data.json">a dependency\'s file</a> <a href="../deploy/missing.yaml">a missing file</a>',
      '<a href="../index.html#top">home, top</a> <a href="../../../../index.html">above the root</a>',
    ].join("\n"),
  );

  /** The check's findings as `page: href (reason)`. */
  const found = () => findBrokenSiteLinks(dist).map((l) => `${l.page}: ${l.href} (${l.reason})`);
  const missing = "no such file on the site (a static server answers 404)";

  it("lists each link a plain static server would not serve, with its page and why: a clean URL, a missing file or id", () => {
    expect(found().sort()).toEqual(
      [
        `index.html: /assets/gone.css (${missing})`,
        `index.html: /docs/a (${missing})`,
        'index.html: docs/a.html#no-such-part (no id "no-such-part" on docs/a.html)',
        `index.html: docs/ (${missing})`,
        'index.html: #bottom (no id "bottom" on index.html)',
        `docs/a.html: ../deploy/dashboard.json (${missing})`,
        `docs/a.html: ../Dockerfile (${missing})`,
        `docs/a.html: ../node_modules/dep/data.json (${missing})`,
        `docs/a.html: ../deploy/missing.yaml (${missing})`,
      ].sort(),
    );
  });

  it("copies the repository files the pages link to into the site at their paths, and nothing of node_modules", () => {
    expect(copyLinkedRepositoryFiles(root, dist)).toEqual(["Dockerfile", "deploy/dashboard.json"]);
    expect(readFileSync(join(dist, "deploy/dashboard.json"), "utf8")).toBe("{}\n");
    expect(found().filter((f) => f.startsWith("docs/a.html"))).toEqual([
      `docs/a.html: ../node_modules/dep/data.json (${missing})`,
      `docs/a.html: ../deploy/missing.yaml (${missing})`,
    ]);
  });
});
