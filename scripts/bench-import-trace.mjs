// `node --import scripts/bench-import-trace.mjs`: appends the npm package name of every
// module the process loads to the file named by CREDHOOK_IMPORT_TRACE (one a line),
// so that `pnpm bench` can tell which packages `credhook serve` loads at startup.
import { appendFileSync } from "node:fs";
import { register } from "node:module";

const file = process.env.CREDHOOK_IMPORT_TRACE;
if (file) {
  const { port1, port2 } = new MessageChannel();
  port1.on("message", (pkg) => appendFileSync(file, `${pkg}\n`));
  port1.unref();
  register(
    `data:text/javascript,${encodeURIComponent(`
      let port;
      export function initialize(data) { port = data.port; }
      export async function resolve(specifier, context, next) {
        const r = await next(specifier, context);
        const m = /node_modules\\/(?:\\.pnpm\\/[^/]+\\/node_modules\\/)?((?:@[^/]+\\/)?[^/]+)/.exec(r.url);
        if (m) port.postMessage(m[1]);
        else if (r.url.includes("/packages/")) port.postMessage("@credhook/" + r.url.split("/packages/")[1].split("/")[0]);
        return r;
      }
    `)}`,
    { data: { port: port2 }, transferList: [port2] },
  );
}
