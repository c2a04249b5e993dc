/**
 * The repository's dangling-reference check: every relative link of a Markdown file, and every
 * reference to a document or to a repository path in Markdown text or in a source comment, must
 * resolve inside the repository. (Links to other sites are not fetched: that would make the check
 * network-bound; the docs site's build checks its own pages.)
 *
 * What is checked, per file kind:
 * - Markdown (`*.md`): the URL of every link, image and link definition that has no scheme
 *   (parsed with mdast-util-from-markdown and GFM, so tables, code spans and code blocks are
 *   understood), including its `#fragment` when the target is a Markdown file (GitHub's heading
 *   slugs, by github-slugger); and, in text and code spans (not code blocks), every `*.md`
 *   reference and every path starting at a top-level folder of the repository.
 * - TypeScript/JavaScript: the same references inside comments (`//`, `/* *\/`).
 * - YAML and shell: the same references in the whole text (descriptions are documentation).
 * A reference resolves when it names an existing file or folder relative to the referring file's
 * folder, to its package (the nearest folder with a package.json), or to the repository root.
 *
 * Used by packages/server/test/doc-links.test.ts (the `pnpm test` tier).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import GithubSlugger from "github-slugger";
import type { Nodes, Root } from "mdast";
import { fromMarkdown } from "mdast-util-from-markdown";
import { gfmFromMarkdown } from "mdast-util-gfm";
import { gfm } from "micromark-extension-gfm";

/** One reference that does not resolve. */
export interface DanglingReference {
  /** The referring file, relative to the repository root. */
  file: string;
  /** 1-based line of the reference. */
  line: number;
  /** The reference as written (a `<name>.md`, a `../<name>.md#<heading>`, a `packages/<path>`). */
  reference: string;
  /** Why it does not resolve. */
  reason: string;
}

/** A reference found in a file, before it is resolved. */
interface FoundReference {
  reference: string;
  line: number;
  /** A Markdown link's URL (fragments checked) rather than a path mentioned in prose. */
  link: boolean;
}

const SOURCE = /\.(?:[cm]?[jt]s|tsx)$/;
const WHOLE_TEXT = /\.(?:ya?ml|sh)$|(?:^|\/)\.ci\/run$/;
/** A URL with a scheme (`https:`, `mailto:`) or protocol-relative: not a repository reference. */
const EXTERNAL = /^(?:[a-z][a-z0-9+.-]*:|\/\/)/i;
/** Parts of a text that are URLs, removed before looking for references. */
const URLS = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'`)<>\]]+/gi;

/**
 * The folders the root `.gitignore` names by a folder pattern: `anywhere` (`dist/`, `node_modules/`,
 * `.git`) tests a folder's name wherever it stands, `atRoot` (`/packs/`) a top-level folder's name.
 * A `*` in a pattern stands for any characters but a slash.
 */
function ignoredFolders(root: string): { anywhere: (name: string) => boolean; atRoot: (name: string) => boolean } {
  const ignoreFile = join(root, ".gitignore");
  const lines = existsSync(ignoreFile)
    ? readFileSync(ignoreFile, "utf8")
        .split("\n")
        .map((l) => l.trim())
    : [];
  const folders = lines.filter((l) => /^\/?[\w.*-]+\/$/.test(l));
  // A folder pattern as a whole-name regular expression; `*` matches any run of characters but `/`.
  const pattern = (name: string) => new RegExp(`^${name.replace(/[.-]/g, "\\$&").replace(/\*/g, "[^/]*")}$`);
  const anywhere = [".git", ...folders.filter((l) => !l.startsWith("/")).map((l) => l.slice(0, -1))].map(pattern);
  const atRoot = folders.filter((l) => l.startsWith("/")).map((l) => pattern(l.slice(1, -1)));
  return { anywhere: (name) => anywhere.some((p) => p.test(name)), atRoot: (name) => atRoot.some((p) => p.test(name)) };
}

/**
 * The repository's files, relative to `root`: every file under it except `.git` and the folders
 * the root `.gitignore` names by a folder pattern (`node_modules/`, `dist/`, or `/packs/` for the
 * root's only; a `*` in a pattern stands for any characters but a slash, as in the pattern for
 * the scratch folders of precompiled-options.test.ts). Its file patterns name no Markdown or
 * source. No `git` process is started, so the check runs in the unit tier.
 */
export function repositoryFiles(root: string): string[] {
  const { anywhere, atRoot } = ignoredFolders(root);
  const files: string[] = [];
  const visit = (dir: string): void => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = dir === "" ? entry.name : `${dir}/${entry.name}`;
      if (entry.isDirectory()) {
        if (!anywhere(entry.name) && !(dir === "" && atRoot(entry.name))) visit(path);
      } else if (entry.isFile()) files.push(path);
    }
  };
  visit("");
  return files.sort();
}

/**
 * Every dangling reference of `files` (paths relative to `root`); an empty array when all resolve.
 * Files of other kinds than Markdown, source, YAML and shell are skipped.
 */
export function findDanglingReferences(root: string, files: string[]): DanglingReference[] {
  const topLevel = new Set(files.filter((f) => f.includes("/")).map((f) => f.slice(0, f.indexOf("/"))));
  const dangling: DanglingReference[] = [];
  for (const file of files) {
    let found: FoundReference[];
    if (file.endsWith(".md")) found = markdownReferences(readFileSync(join(root, file), "utf8"), topLevel);
    else if (SOURCE.test(file)) found = textReferences(commentsOf(readFileSync(join(root, file), "utf8")), topLevel);
    else if (WHOLE_TEXT.test(file)) found = textReferences(readFileSync(join(root, file), "utf8"), topLevel);
    else continue;
    for (const ref of found) {
      const reason = unresolved(root, file, ref);
      if (reason !== undefined) dangling.push({ file, line: ref.line, reference: ref.reference, reason });
    }
  }
  return dangling;
}

/** Why `ref` of `file` does not resolve, or undefined when it does. */
function unresolved(root: string, file: string, ref: FoundReference): string | undefined {
  const [rawPath, fragment] = splitFragment(ref.reference);
  let path: string;
  try {
    path = decodeURIComponent(rawPath);
  } catch {
    path = rawPath;
  }
  const fileDir = dirname(join(root, file));
  if (path === "") {
    if (!ref.link || fragment === undefined) return undefined;
    return headingMissing(join(root, file), fragment);
  }
  const bases = path.startsWith("/") ? [root] : ref.link ? [fileDir] : [fileDir, packageDir(root, fileDir), root];
  const target = bases.map((b) => resolve(b, path.replace(/^\//, ""))).find((p) => existsSync(p));
  // A path through a folder the .gitignore names (`docs/.vitepress/dist`) is a build's output, made by a
  // command the text names, not a file of the repository: it exists only after that build.
  if (target === undefined && path.split("/").some(ignoredFolders(root).anywhere)) return undefined;
  if (target === undefined) return "no such file or folder in the repository";
  if (relative(root, target).startsWith("..")) return "points outside the repository";
  if (ref.link && fragment !== undefined && target.endsWith(".md")) return headingMissing(target, fragment);
  return undefined;
}

/** `path#fragment` → [path, fragment]; the query of a link is dropped. */
function splitFragment(reference: string): [string, string | undefined] {
  const hash = reference.indexOf("#");
  const path = (hash < 0 ? reference : reference.slice(0, hash)).replace(/\?.*$/, "");
  return [path, hash < 0 ? undefined : reference.slice(hash + 1)];
}

/** The nearest folder at or above `dir` (inside `root`) with a package.json; `root` when none. */
function packageDir(root: string, dir: string): string {
  for (let d = dir; !relative(root, d).startsWith(".."); d = dirname(d)) {
    if (existsSync(join(d, "package.json"))) return d;
    if (d === root) break;
  }
  return root;
}

/** A message when the Markdown file `path` has no heading whose GitHub slug is `fragment`. */
function headingMissing(path: string, fragment: string): string | undefined {
  const slugger = new GithubSlugger();
  const slugs = new Set<string>();
  const explicit = new Set<string>();
  const text = readFileSync(path, "utf8");
  walk(parseMarkdown(text), (node) => {
    if (node.type === "heading") slugs.add(slugger.slug(plainText(node)));
    if (node.type === "html") for (const m of node.value.matchAll(/\b(?:id|name)="([^"]+)"/g)) explicit.add(m[1] ?? "");
  });
  return slugs.has(fragment) || explicit.has(fragment)
    ? undefined
    : `no heading #${fragment} in ${path.split("/").pop()}`;
}

function parseMarkdown(text: string): Root {
  return fromMarkdown(text, { extensions: [gfm()], mdastExtensions: [gfmFromMarkdown()] });
}

function walk(node: Nodes, visit: (node: Nodes) => void): void {
  visit(node);
  if ("children" in node) for (const child of node.children) walk(child as Nodes, visit);
}

function plainText(node: Nodes): string {
  if (node.type === "text" || node.type === "inlineCode") return node.value;
  return "children" in node ? node.children.map((c) => plainText(c as Nodes)).join("") : "";
}

/** The links of a Markdown text, and the references in its prose and code spans (not code blocks). */
export function markdownReferences(text: string, topLevel: ReadonlySet<string>): FoundReference[] {
  const found: FoundReference[] = [];
  walk(parseMarkdown(text), (node) => {
    const line = node.position?.start.line ?? 0;
    if ((node.type === "link" || node.type === "image" || node.type === "definition") && !EXTERNAL.test(node.url)) {
      found.push({ reference: node.url, line, link: true });
    } else if (node.type === "text" || node.type === "inlineCode") {
      for (const ref of textReferences(node.value, topLevel)) found.push({ ...ref, line: line + ref.line - 1 });
    }
  });
  return found;
}

/**
 * The document references (`<name>.md`, `<folder>/<name>.md#<heading>`) and repository paths (starting with one
 * of `topLevel`'s folders) in a piece of prose. A path with a placeholder or a glob (`<name>`,
 * `{id}`, `*`, `$VAR`, `…`) names a family of files and is skipped; so are URLs.
 */
export function textReferences(text: string, topLevel: ReadonlySet<string>): FoundReference[] {
  const found: FoundReference[] = [];
  const lines = text.replace(URLS, (url) => " ".repeat(url.length)).split("\n");
  const top = [...topLevel].map((t) => t.replace(/[.]/g, "\\.")).join("|");
  const pattern = new RegExp(
    `(?<![\\w/.@<{*$-])((?:\\.{1,2}/)*[\\w.-]+(?:/[\\w.-]+)*\\.md(?:#[\\w-]+)?|(?:${top || "(?!)"})/[\\w.@/-]*)(?![\\w<{*$…/-]|\\.\\w)`,
    "g",
  );
  lines.forEach((lineText, i) => {
    for (const m of lineText.matchAll(pattern)) {
      const reference = (m[1] ?? "").replace(/[.]+$/, "");
      const after = lineText[m.index + m[0].length] ?? "";
      if (after === "<" || after === "{" || after === "*" || after === "…") continue;
      found.push({ reference, line: i + 1, link: false });
    }
  });
  return found;
}

/**
 * The comments of a TypeScript/JavaScript text with their line breaks kept (so that lines still
 * count from the file's start); code and string literals become blanks. A simple scanner:
 * strings ('…', "…", `…` without nested templates) and regular-expression literals after
 * an operator are skipped as code.
 */
export function commentsOf(source: string): string {
  let out = "";
  let i = 0;
  const blank = (s: string) => s.replace(/[^\n]/g, " ");
  while (i < source.length) {
    const c = source[i];
    const next = source[i + 1];
    if (c === "/" && next === "/") {
      const end = source.indexOf("\n", i);
      const stop = end < 0 ? source.length : end;
      out += source.slice(i, stop);
      i = stop;
    } else if (c === "/" && next === "*") {
      const end = source.indexOf("*/", i + 2);
      const stop = end < 0 ? source.length : end + 2;
      out += source.slice(i, stop);
      i = stop;
    } else if (c === '"' || c === "'" || c === "`") {
      let j = i + 1;
      while (j < source.length && source[j] !== c) {
        if (source[j] === "\\") j++;
        else if (c !== "`" && source[j] === "\n") break;
        j++;
      }
      out += blank(source.slice(i, j + 1));
      i = j + 1;
    } else if (c === "/" && /[=(,:;!&|?{}[\n]\s*$/.test(source.slice(Math.max(0, i - 20), i))) {
      // A regular-expression literal: up to its closing slash outside a character class.
      let j = i + 1;
      let inClass = false;
      while (j < source.length && source[j] !== "\n" && (inClass || source[j] !== "/")) {
        if (source[j] === "\\") j++;
        else if (source[j] === "[") inClass = true;
        else if (source[j] === "]") inClass = false;
        j++;
      }
      out += blank(source.slice(i, j + 1));
      i = j + 1;
    } else {
      out += c === "\n" ? "\n" : " ";
      i++;
    }
  }
  return out;
}
