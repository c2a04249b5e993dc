/**
 * A real NGINX (Debian's `nginx` and `libnginx-mod-http-headers-more-filter`
 * packages; `.ci/run` installs them when missing) runs
 * examples/nginx/credhook-auth.conf as shipped — only its addresses replaced —
 * in front of a recording upstream, with auth_request to credhook's embedded
 * gateway: the shared proxy tests (proxy-contract.ts). Skipped, saying why, only
 * where no nginx binary (or no headers-more module) exists.
 */
import { describe } from "vitest";
import { proxyContract } from "./proxy-contract.js";
import { HEADERS_MORE, NGINX_BIN, startNginx } from "./proxies.js";

if (!NGINX_BIN || !HEADERS_MORE) {
  console.warn(
    "nginx.test.ts SKIPPED: no nginx binary or no headers-more module found (install Debian's nginx and libnginx-mod-http-headers-more-filter packages; .ci/run does so when it runs as root)",
  );
}

describe.skipIf(!NGINX_BIN || !HEADERS_MORE)("a real NGINX with auth_request to the embedded gateway (examples/nginx/credhook-auth.conf)", () => {
  proxyContract((t) => startNginx(t));
});
