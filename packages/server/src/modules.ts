/**
 * Provider and store packages a bundle carries inside it (the Lambda zip of
 * `pnpm lambda:bundle`), by the specifier the config resolves to (`@credhook/provider-aws` …):
 * the bundle's entry registers a loader per package it includes, and
 * {@link importProviderModule} asks here before `import()`, which a bundle has no
 * node_modules for. Empty outside a bundle.
 */
export const bundledModules = new Map<string, () => Promise<unknown>>();
