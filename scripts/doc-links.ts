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
 *
 * The built docs site (`pnpm docs:build` writes docs/.vitepress/dist) is checked the same way, by the
 * build itself (docs/.vitepress/config.ts, `buildEnd`): {@link copyLinkedRepositoryFiles} puts the
 * repository files its pages link to (the Grafana dashboard, the OpenAPI YAML …) into the site at
 * their repository paths, then {@link findBrokenSiteLinks} crawls every page and the build fails on a
 * link a plain static file server would not serve.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import GithubSlugger from "github-slugger";
import { Parser } from "htmlparser2";
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

/** One link of the built docs site that a plain static file server would not serve. */
export interface BrokenSiteLink {
  /** The page it is on, relative to the site's folder (`guide/deploy.html`). */
  page: string;
  /** The link as written in the page (an `href` or `src`: `../deploy/grafana/credhook-dashboard.json`). */
  href: string;
  /** The file it asks the server for, relative to the site's folder, without the fragment (`deploy/grafana/credhook-dashboard.json`). */
  path: string;
  /** Why it does not resolve: no such file (nor a folder with an index.html), or no such id on the page. */
  reason: string;
}

/** The origin the site's pages are given to resolve their links as a browser does (never contacted). */
const SITE = "http://site.invalid";

/** Every file under `dir`, relative to it, with `/` separators. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)).split("\\").join("/"));
}

/** The `href` and `src` values of an HTML text (entities decoded), and the ids it declares (`id`, `<a name>`). */
function linksAndIds(html: string): { links: string[]; ids: Set<string> } {
  const links: string[] = [];
  const ids = new Set<string>();
  const parser = new Parser({
    onopentag(name, attributes) {
      for (const attribute of ["href", "src"]) {
        const value = attributes[attribute];
        if (value !== undefined) links.push(value);
      }
      if (attributes.id !== undefined) ids.add(attributes.id);
      if (name === "a" && attributes.name !== undefined) ids.add(attributes.name);
    },
  });
  parser.write(html);
  parser.end();
  return { links, ids };
}

/**
 * The file a plain static file server (nginx, `python3 -m http.server`, an object store) answers
 * `path` with: the file at `path` under `dist`, or a folder's `index.html` — no rewrite such as
 * VitePress's clean URLs (`/guide/deploy` for `guide/deploy.html`), which needs a server of its own.
 * @returns its path relative to `dist`, or undefined (404)
 */
function servedFile(dist: string, path: string): string | undefined {
  const target = join(dist, path);
  if (!existsSync(target)) return undefined;
  if (statSync(target).isFile()) return path;
  const index = path === "" || path.endsWith("/") ? `${path}index.html` : `${path}/index.html`;
  return existsSync(join(dist, index)) ? index : undefined;
}

/**
 * Every link of the built site in `dist` that a plain static file server would not serve: each
 * `href` and `src` of each HTML page that stays on the site (no scheme or host of its own: external
 * links are not fetched), resolved against the page's URL as a browser does, must name a file under
 * `dist` or a folder with an `index.html`, and its `#fragment`, on an HTML page, an id there. The site
 * is served at the root of its host (VitePress's `base` is `/`).
 */
export function findBrokenSiteLinks(dist: string): BrokenSiteLink[] {
  const pages = filesUnder(dist).filter((f) => f.endsWith(".html"));
  const parsed = new Map<string, ReturnType<typeof linksAndIds>>();
  const parse = (page: string) => {
    let got = parsed.get(page);
    if (!got) parsed.set(page, (got = linksAndIds(readFileSync(join(dist, page), "utf8"))));
    return got;
  };
  const broken: BrokenSiteLink[] = [];
  for (const page of pages) {
    const base = new URL(`/${page}`, SITE);
    for (const href of new Set(parse(page).links)) {
      let url: URL;
      try {
        url = new URL(href, base);
      } catch {
        broken.push({ page, href, path: href, reason: "not a valid URL" });
        continue;
      }
      if (url.origin !== SITE) continue;
      const path = decodeURIComponent(url.pathname).slice(1);
      const served = servedFile(dist, path);
      if (served === undefined) {
        broken.push({ page, href, path, reason: "no such file on the site (a static server answers 404)" });
        continue;
      }
      const fragment = decodeURIComponent(url.hash.slice(1));
      if (fragment !== "" && served.endsWith(".html") && !parse(served).ids.has(fragment))
        broken.push({ page, href, path, reason: `no id "${fragment}" on ${served}` });
    }
  }
  return broken;
}

/**
 * Copies into the built site in `dist` each repository file (under `root`, as {@link repositoryFiles}
 * lists them: never node_modules or a build's output) that a page links to and the site does not
 * serve — the Grafana dashboard, the Kubernetes manifest, the OpenAPI YAML, the default config, a
 * source file — to the same path as in the repository. The site keeps the repository's paths (its
 * source folder is the repository root), so a page's relative link to such a file then resolves on
 * any static server.
 * @returns the paths copied, relative to both folders
 */
export function copyLinkedRepositoryFiles(root: string, dist: string): string[] {
  const repository = new Set(repositoryFiles(root));
  const wanted = new Set(findBrokenSiteLinks(dist).map((l) => l.path));
  const copied = [...wanted].filter((path) => repository.has(path)).sort();
  for (const path of copied) {
    mkdirSync(dirname(join(dist, path)), { recursive: true });
    copyFileSync(join(root, path), join(dist, path));
  }
  return copied;
}
