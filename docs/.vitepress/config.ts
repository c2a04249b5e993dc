/**
 * The docs site (VitePress): `pnpm docs:build` writes it to docs/.vitepress/dist, `pnpm docs:preview`
 * serves that build, `pnpm docs:dev` serves the pages while you edit. Its source is the whole
 * repository's Markdown (srcDir is the repository root), so that the README, CONTRIBUTING and each
 * package's README are pages too and every relative link resolves the same way on the site as in the
 * repository. The build is a folder of files any static file server serves as it is: pages are
 * `.html` files linked by those names (no clean URLs, which need a server that rewrites
 * `/docs/deploy` to the page's `.html` file), the repository files the pages link to are copied in at
 * their repository paths, and the build fails on a link it would not serve (scripts/doc-links.ts:
 * every `href` and `src` of every page, and each `#fragment`), besides VitePress's own dead-link
 * check of the Markdown (`ignoreDeadLinks` is not set).
 */
import { existsSync, statSync } from "node:fs";
import { basename, dirname, resolve } from "node:path";
import { slug } from "github-slugger";
import { defineConfig, type MarkdownRenderer } from "vitepress";
import { copyLinkedRepositoryFiles, findBrokenSiteLinks } from "../../scripts/doc-links.ts";

/** A link with a scheme (`https:`, `mailto:`), protocol-relative, absolute on the site, or to a heading of the page. */
const NOT_A_FILE_LINK = /^(?:[a-z][a-z0-9+.-]*:|\/|#)/i;

/**
 * A markdown-it plugin: a relative link to a repository file without an extension (the
 * Dockerfile, examples/caddy/Caddyfile) gets the `download` attribute. VitePress takes a name
 * without an extension for a page, and would link `Dockerfile.html`; with `download` it leaves the
 * link as written, its router lets the browser fetch the file, and buildEnd copies it into the site.
 * (A static server sends such a file as a download anyway: it has no type to show it by.)
 */
function downloadExtensionlessFiles(md: MarkdownRenderer): void {
  const render = md.renderer.rules.link_open;
  md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
    const token = tokens[idx]!;
    const href = token.attrGet("href");
    if (href && !NOT_A_FILE_LINK.test(href)) {
      const path = decodeURI(href.replace(/[?#].*$/, ""));
      // The Markdown file being rendered (realPath: the README itself, not the home page it is rewritten to).
      const target = resolve(dirname(env.realPath ?? env.path), path);
      if (!basename(path).includes(".") && existsSync(target) && statSync(target).isFile())
        token.attrSet("download", "");
    }
    return render ? render(tokens, idx, options, env, self) : self.renderToken(tokens, idx, options);
  };
}

/** The built-in providers, one page each (their package READMEs). */
const providers = ["local", "aws", "azure", "gcp", "kong", "apigee"];

export default defineConfig({
  title: "credhook",
  description: "Multi-cloud credential-provisioning webhook for developer portals",
  srcDir: "..",
  srcExclude: ["**/node_modules/**", "**/dist/**", "packs/**", "lambda/**", "data/**", "coverage/**"],
  // The README is the home page; every other page keeps its repository path.
  rewrites: { "README.md": "index.md" },
  // Pages are linked as the files they are (`deploy.html`, not `deploy`): a deep link works on any static server.
  cleanUrls: false,
  // Headings' ids as GitHub makes them (github-slugger, as scripts/doc-links.ts checks the Markdown's
  // `#fragment` links), so that a link to a heading works the same on GitHub and on the site.
  markdown: {
    anchor: { slugify: (text) => slug(text) },
    headers: { slugify: (text) => slug(text) },
    config: downloadExtensionlessFiles,
  },
  /**
   * After the pages are written: the repository files they link to join the site at their
   * repository paths, then every link of every page must resolve on a plain static server.
   * @throws listing each link that does not (page, link, reason): the build fails
   */
  buildEnd(site) {
    const copied = copyLinkedRepositoryFiles(site.srcDir, site.outDir);
    const broken = findBrokenSiteLinks(site.outDir);
    if (broken.length > 0) {
      throw new Error(
        `${broken.length} link(s) of the built site would not resolve on a static server:\n${broken
          .map((l) => `  ${l.page}: ${l.href} (${l.reason})`)
          .join("\n")}`,
      );
    }
    console.log(`links checked: every page's links resolve; ${copied.length} repository file(s) copied in`);
  },
  themeConfig: {
    search: { provider: "local" },
    nav: [
      { text: "Guide", link: "/docs/configuration" },
      { text: "API reference", link: "/docs/api-reference" },
      { text: "Providers", link: "/packages/provider-local/README" },
      { text: "Contributing", link: "/CONTRIBUTING" },
    ],
    sidebar: [
      {
        text: "Start",
        items: [
          { text: "Overview (README)", link: "/" },
          { text: "The contract", link: "/docs/contract" },
          { text: "API reference (OpenAPI)", link: "/docs/api-reference" },
          { text: "Architecture", link: "/docs/architecture" },
          { text: "Status codes", link: "/docs/status-codes" },
        ],
      },
      {
        text: "Operate",
        items: [
          { text: "Configuration", link: "/docs/configuration" },
          { text: "One app, several clouds", link: "/docs/multi-cloud" },
          { text: "The embedded gateway", link: "/docs/embedded-gateway" },
          { text: "Deploy", link: "/docs/deploy" },
          { text: "Operations", link: "/docs/operations" },
          { text: "Events and audit", link: "/docs/events" },
          { text: "Leak response", link: "/docs/leak-response" },
          { text: "Credential expiry", link: "/docs/expiry" },
          { text: "Gateway migration", link: "/docs/gateway-migration" },
          { text: "Cloud facts", link: "/docs/cloud-facts" },
          { text: "Benchmark", link: "/docs/benchmark" },
        ],
      },
      {
        text: "Providers",
        items: providers.map((p) => ({ text: p, link: `/packages/provider-${p}/README` })),
      },
      {
        text: "Contribute",
        items: [
          { text: "CONTRIBUTING", link: "/CONTRIBUTING" },
          { text: "Changelog", link: "/CHANGELOG" },
          { text: "Writing a provider", link: "/docs/writing-a-provider" },
          { text: "Repository layout", link: "/docs/repository-layout" },
          { text: "Tests", link: "/docs/testing" },
        ],
      },
      {
        text: "Packages",
        items: ["core", "server", "gateway", "store-sqlite", "store-postgres", "provider-testkit", "fakes"].map(
          (p) => ({
            text: `@credhook/${p}`,
            link: `/packages/${p}/README`,
          }),
        ),
      },
    ],
  },
});
