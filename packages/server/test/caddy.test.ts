/**
 * A real Caddy (Debian's `caddy` package; `.ci/run` installs it when missing)
 * runs examples/caddy/Caddyfile as shipped — only its addresses replaced — in
 * front of a recording upstream, with forward_auth to credhook's embedded
 * gateway: the same tests as NGINX (proxy-contract.ts). Skipped, saying why,
 * only where no caddy binary exists.
 */
import { describe } from "vitest";
import { proxyContract } from "./proxy-contract.js";
import { CADDY_BIN, startCaddy } from "./proxies.js";

if (!CADDY_BIN)
  console.warn(
    "caddy.test.ts SKIPPED: no caddy binary found (install Debian's caddy package: apt-get install caddy; .ci/run does so when it runs as root)",
  );

describe.skipIf(!CADDY_BIN)("a real Caddy with forward_auth to the embedded gateway (examples/caddy/Caddyfile)", () => {
  proxyContract((t) => startCaddy(t));
});
