// pnpm loads this file first in every `pnpm install` of the workspace, before it resolves or links
// anything (https://pnpm.io/pnpmfile). On a Node.js older than package.json's `engines.node` it
// stops the install with the fix, instead of an install that passes with one "Unsupported engine"
// warning per package and a `credhook` that then refuses to start. `engine-strict=true` in .npmrc
// stops it as well (for a pnpm run with --ignore-pnpmfile, and for npm), but its message names no fix.
// packages/server/test/node-version.test.ts runs an install under Node 20 and reads this message.
const { readFileSync } = require("node:fs");
const { join } = require("node:path");

/** The README's line that puts Node 22 from npm first on PATH for the current shell. */
const PATH_LINE = 'export PATH="$(dirname "$(npx --yes node@22 -p process.execPath)")":$PATH';

/** `engines.node` of the root package.json: a `>=MAJOR.MINOR` range (the only form this check reads). */
const wanted = JSON.parse(readFileSync(join(__dirname, "package.json"), "utf8")).engines.node;
const minimum = /^>=\s*(\d+)\.(\d+)/.exec(wanted);
if (!minimum) throw new Error(`.pnpmfile.cjs reads engines.node as ">=MAJOR.MINOR"; package.json has "${wanted}"`);
const [major, minor] = process.versions.node.split(".").map(Number);
const [needMajor, needMinor] = [Number(minimum[1]), Number(minimum[2])];
if (major < needMajor || (major === needMajor && minor < needMinor)) {
  process.stderr.write(
    `credhook needs Node.js ${wanted} (22 or 24); this is Node.js ${process.version}, so \`pnpm install\` stops here.\n` +
      "Put Node 22 from npm first on PATH for this shell (the README's quick start), then install again:\n\n" +
      `  ${PATH_LINE}\n\n` +
      "or, with nvm: `nvm install && nvm use` (.nvmrc names Node 22).\n",
  );
  process.exit(1);
}

module.exports = {};
