/**
 * A real NGINX (Debian's `nginx`, `libnginx-mod-http-headers-more-filter` and
 * `libnginx-mod-http-set-misc` packages; `.ci/run` installs them when missing) runs
 * examples/nginx/credhook-auth.conf as shipped — only its addresses replaced —
 * in front of a recording upstream, with auth_request to credhook's embedded
 * gateway: the shared proxy tests (proxy-contract.ts). Skipped, saying why, only
 * where no nginx binary (or no headers-more module) exists.
 */
import { describe } from "vitest";
import { proxyContract } from "./proxy-contract.js";
import { NGINX_MODULES, NGINX_BIN, startNginx } from "./proxies.js";

if (!NGINX_BIN || !NGINX_MODULES) {
  console.warn(
    "nginx.test.ts SKIPPED: no nginx binary or no headers-more or set-misc module found (install Debian's nginx, libnginx-mod-http-headers-more-filter and libnginx-mod-http-set-misc packages; .ci/run does so when it runs as root)",
  );
}

describe.skipIf(!NGINX_BIN || !NGINX_MODULES)(
  "a real NGINX with auth_request to the embedded gateway (examples/nginx/credhook-auth.conf)",
  () => {
    proxyContract((t) => startNginx(t), {
      // NGINX caches admissions credhook marks cacheable: most of a burst never reaches credhook.
      cachesAdmissions: true,
    });
  },
);
