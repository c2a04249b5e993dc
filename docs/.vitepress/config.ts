/**
 * The docs site (VitePress): `pnpm docs:build` writes it to docs/.vitepress/dist, `pnpm docs:dev`
 * serves it while you edit. Its source is the whole repository's Markdown (srcDir is the repository
 * root), so that the README, CONTRIBUTING and each package's README are pages too and every relative
 * link resolves the same way on the site as in the repository. The build fails on a dead link
 * (VitePress's default: `ignoreDeadLinks` is not set).
 */
import { defineConfig } from "vitepress";

/** The built-in providers, one page each (their package READMEs). */
const providers = ["local", "aws", "azure", "gcp", "kong", "apigee"];

export default defineConfig({
  title: "credhook",
  description: "Multi-cloud credential-provisioning webhook for developer portals",
  srcDir: "..",
  srcExclude: ["**/node_modules/**", "**/dist/**", "packs/**", "lambda/**", "data/**", "coverage/**"],
  // The README is the home page; every other page keeps its repository path.
  rewrites: { "README.md": "index.md" },
  cleanUrls: true,
  // A dead link fails the build. VitePress checks links to pages (Markdown, or no extension) and
  // leaves links to other files alone; the two repository files without an extension that the pages
  // link to (the Dockerfile, examples/caddy/Caddyfile) are files, not pages.
  ignoreDeadLinks: [/(^|\/)(Dockerfile|Caddyfile)$/],
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
