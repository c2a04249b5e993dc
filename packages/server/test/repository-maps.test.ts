/**
 * The maps a contributor reads first stay true: docs/repository-layout.md lists every package of the workspace
 * and every `credhook` command (one file each under packages/server/src/commands/), CONTRIBUTING.md names every
 * package, and neither names a package or a command that is gone. A new package or command fails here until the
 * maps say where it is.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { credhookProgram } from "../src/cli.js";

const root = fileURLToPath(new URL("../../..", import.meta.url));
const read = (path: string) => readFileSync(join(root, path), "utf8");

/** Every workspace package: a folder under packages/ with a package.json. */
const PACKAGES = readdirSync(join(root, "packages"), { withFileTypes: true })
  .filter((e) => e.isDirectory() && existsSync(join(root, "packages", e.name, "package.json")))
  .map((e) => `packages/${e.name}`)
  .sort();

/** The `credhook` command's subcommands, as the program registers them. */
const COMMANDS = credhookProgram()
  .commands.map((c) => c.name())
  .sort();

/** The `packages/<name>` paths a Markdown text names in backticks (the folder alone, or a path inside it). */
function packagesNamed(text: string): string[] {
  return [...new Set([...text.matchAll(/`packages\/([a-z0-9-]+)[`/]/g)].map((m) => `packages/${m[1]}`))].sort();
}

/** The first cell of each row of the Markdown table whose header starts with `| <header> |`. */
function firstColumn(text: string, header: string): string[] {
  const lines = text.split("\n");
  const start = lines.findIndex((l) => l.startsWith(`| ${header} |`));
  if (start < 0) throw new Error(`no table headed '${header}'`);
  const rows: string[] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith("|")) break;
    rows.push(line.split("|")[1]!.trim().replace(/`/g, ""));
  }
  return rows;
}

describe("docs/repository-layout.md", () => {
  const layout = read("docs/repository-layout.md");

  it("has a row for every package of the workspace, and none for a package that is gone", () => {
    expect(firstColumn(layout, "package").sort()).toEqual(PACKAGES);
  });

  it("has a row for every credhook command, and none for a command that is gone", () => {
    expect(COMMANDS.length).toBeGreaterThan(10);
    expect(firstColumn(layout, "command").sort()).toEqual(COMMANDS);
  });

  it("has one file per command under packages/server/src/commands/", () => {
    const files = readdirSync(join(root, "packages/server/src/commands")).map((f) => f.replace(/\.ts$/, ""));
    for (const command of COMMANDS) expect(files, `commands/${command}.ts`).toContain(command);
  });
});

describe("CONTRIBUTING.md", () => {
  const contributing = read("CONTRIBUTING.md");

  it("names every package of the workspace, and no package that is gone", () => {
    expect(PACKAGES.filter((p) => !packagesNamed(contributing).includes(p))).toEqual([]);
    expect(packagesNamed(contributing).filter((p) => !PACKAGES.includes(p))).toEqual([]);
  });

  it("keeps its tables' cells short (the detail lives in the sections below them)", () => {
    const cells = contributing
      .split("\n")
      .filter((l) => l.startsWith("|") && !/^\|[-| ]+\|$/.test(l))
      .flatMap((l) => l.split("|").slice(1, -1));
    const words = (cell: string) => cell.trim().split(/\s+/).filter(Boolean).length;
    expect(cells.filter((c) => words(c) > 40)).toEqual([]);
  });
});
