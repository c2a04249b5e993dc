/**
 * A folder of fixture files for a test (a repository, a built site): created under the system's
 * temporary folder, written one file at a time, removed by the test.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

/** A fixture folder: its absolute path, a writer and its removal. */
export interface FixtureTree {
  /** Absolute path of the folder. */
  root: string;
  /** Writes `text` to `path` (relative to {@link root}), creating its parent folders. */
  write(path: string, text: string): void;
  /** Removes the folder and everything in it. */
  remove(): void;
}

/** A new, empty fixture folder named `<prefix>XXXXXX` in the system's temporary folder. */
export function fixtureTree(prefix: string): FixtureTree {
  const root = mkdtempSync(join(tmpdir(), prefix));
  return {
    root,
    write(path, text) {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), text);
    },
    remove: () => rmSync(root, { recursive: true, force: true }),
  };
}
