/**
 * The docs site (docs/.vitepress/config.ts): its sidebar lists every page, that is every Markdown
 * file of the repository the site is built from (the README as home, CONTRIBUTING, the CHANGELOG,
 * docs/, each package's README), and links nothing else. `pnpm docs:build` (in .ci/run) checks the links inside
 * the pages.
 */
import { expect, it } from "vitest";
import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";

const REPO = fileURLToPath(new URL("../../../", import.meta.url));

type Item = { link?: string; items?: Item[] };
const links = (items: Item[]): string[] => items.flatMap((i) => [...(i.link ? [i.link] : []), ...links(i.items ?? [])]);

it("the sidebar lists every page of the site, and only pages", async () => {
  const { default: config } = (await import("../../../docs/.vitepress/config.ts")) as {
    default: { themeConfig: { sidebar: Item[]; nav: Item[] } };
  };
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
