#!/usr/bin/env node
// The `credhook` command. Runs the compiled CLI (dist/) when it has been built
// with `pnpm build`; otherwise runs the TypeScript sources through tsx, with the
// "dev-source" export condition so sibling @credhook/* packages resolve to src/.
import { existsSync } from "node:fs";
import { register } from "node:module";

const built = new URL("../dist/cli.js", import.meta.url);
if (existsSync(built) && !process.env.CREDHOOK_FROM_SOURCE) {
  await import(built.href);
} else {
  register(new URL("./dev-source-hook.mjs", import.meta.url));
  const { register: registerTsx } = await import("tsx/esm/api");
  registerTsx();
  await import(new URL("../src/cli.ts", import.meta.url).href);
}
