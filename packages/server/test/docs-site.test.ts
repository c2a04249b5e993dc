/**
 * The docs site (docs/.vitepress/config.ts): its sidebar lists every page, that is every Markdown
 * file of the repository the site is built from (the README as home, CONTRIBUTING, the CHANGELOG,
 * docs/, each package's README), and links nothing else. `pnpm docs:build` (in .ci/run) checks the links inside
 * the pages, in the config's buildEnd, which these tests run on a fixture site; and its Markdown
 * gives headings GitHub's ids and leaves links to files without an extension as written.
 */
import { expect, it } from "vitest";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createMarkdownRenderer, type MarkdownOptions, type SiteConfig } from "vitepress";
import { fixtureTree } from "./fixture-tree.js";

const REPO = fileURLToPath(new URL("../../../", import.meta.url));

type Item = { link?: string; items?: Item[] };
const links = (items: Item[]): string[] => items.flatMap((i) => [...(i.link ? [i.link] : []), ...links(i.items ?? [])]);

/** The site's configuration, as VitePress reads it. */
const siteConfig = async () =>
  (
    (await import("../../../docs/.vitepress/config.ts")) as {
      default: {
        themeConfig: { sidebar: Item[]; nav: Item[] };
        cleanUrls: boolean;
        markdown: MarkdownOptions;
        buildEnd: (site: SiteConfig) => void;
      };
    }
  ).default;

it("the sidebar lists every page of the site, and only pages", async () => {
  const config = await siteConfig();
  const pages = [
    "/",
    "/CONTRIBUTING",
    "/CHANGELOG",
    ...readdirSync(`${REPO}docs`)
      .filter((f) => f.endsWith(".md"))
      .map((f) => `/docs/${f.slice(0, -3)}`),
    ...readdirSync(`${REPO}packages`).map((p) => `/packages/${p}/README`),
  ];
  const listed = links(config.themeConfig.sidebar);
  expect(new Set(listed).size, "a page listed twice").toBe(listed.length);
  expect([...listed].sort()).toEqual([...pages].sort());
  expect(links(config.themeConfig.nav).filter((l) => !pages.includes(l))).toEqual([]);
});

it("the build ends by copying in the repository files the pages link to, and fails on a link a static server would not serve", async () => {
  const { buildEnd, cleanUrls } = await siteConfig();
  expect(cleanUrls).toBe(false);
  const { root, write, remove } = fixtureTree("credhook-site-build-");
  try {
    const outDir = join(root, "docs/.vitepress/dist");
    write(".gitignore", "dist/\n");
    write("deploy/alerts.yaml", "groups: []\n");
    write(
      "docs/.vitepress/dist/docs/deploy.html",
      '<a href="../deploy/alerts.yaml">alerts</a> <a href="./deploy.html">me</a>',
    );
    const site = { srcDir: root, outDir } as SiteConfig; // the two fields buildEnd reads
    buildEnd(site);
    expect(readdirSync(join(outDir, "deploy"))).toEqual(["alerts.yaml"]);
    write(
      "docs/.vitepress/dist/index.html",
      '<a href="/docs/deploy">a clean URL</a> <a href="/docs/deploy.html#nope">x</a>',
    );
    expect(() => buildEnd(site)).toThrow(
      [
        "2 link(s) of the built site would not resolve on a static server:",
        "  index.html: /docs/deploy (no such file on the site (a static server answers 404))",
        '  index.html: /docs/deploy.html#nope (no id "nope" on docs/deploy.html)',
      ].join("\n"),
    );
  } finally {
    remove();
  }
});

it("its Markdown gives headings GitHub's ids, links pages by their .html files and a file without an extension as written", async () => {
  const { markdown } = await siteConfig();
  const md = await createMarkdownRenderer(REPO, markdown, "/");
  const html = md.render(
    "## The scanner's pattern: `credhook inspect` & more\n\nSee [deploy](./deploy.md#memory), [the image](../Dockerfile), [the rules](../deploy/prometheus/credhook-alerts.yaml).\n",
    { path: join(REPO, "docs", "page.md"), relativePath: "docs/page.md", cleanUrls: false },
  );
  // github-slugger's id, the one a `#fragment` link written for GitHub names (VitePress's own would be the-scanner-s-…)
  expect(html).toContain('id="the-scanners-pattern-credhook-inspect--more"');
  expect(html).toContain('href="./deploy.html#memory"');
  expect(html).toContain('href="../Dockerfile" download=""');
  expect(html).toContain('href="../deploy/prometheus/credhook-alerts.yaml"');
});
