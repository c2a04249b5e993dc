/**
 * Build-time data of docs/api-reference.md: the contract's OpenAPI document
 * (packages/core/openapi/credential-webhook.openapi.yaml), parsed with `yaml`, reduced to what the
 * page lists — each operation with its summary and the statuses it answers, and each schema.
 * VitePress reloads it when the YAML changes (`watch`).
 */
import { readFileSync } from "node:fs";
import { parse } from "yaml";

const FILE = "../../packages/core/openapi/credential-webhook.openapi.yaml";

/** One operation of the document: method, path, summary and the statuses it answers (with their descriptions). */
export interface Operation {
  method: string;
  path: string;
  summary: string;
  description: string;
  responses: { status: string; description: string }[];
}

/** What the page renders: the document's title, version and summary, its operations, and its schemas' names and descriptions. */
export interface OpenApiData {
  title: string;
  version: string;
  summary: string;
  operations: Operation[];
  schemas: { name: string; description: string }[];
}

type Doc = {
  info: { title: string; version: string; summary?: string };
  paths: Record<
    string,
    Record<
      string,
      { summary?: string; description?: string; responses?: Record<string, { description?: string; $ref?: string }> }
    >
  >;
  components?: {
    schemas?: Record<string, { description?: string }>;
    responses?: Record<string, { description?: string }>;
  };
};

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options"];

declare const data: OpenApiData;
export { data };

export default {
  watch: [FILE],
  load(): OpenApiData {
    const doc = parse(readFileSync(new URL(FILE, import.meta.url), "utf8")) as Doc;
    const described = (r: { description?: string; $ref?: string }) =>
      r.description ?? doc.components?.responses?.[r.$ref?.split("/").pop() ?? ""]?.description ?? "";
    const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
      METHODS.filter((m) => item[m]).map((m) => ({
        method: m.toUpperCase(),
        path,
        summary: item[m]!.summary ?? "",
        description: item[m]!.description ?? "",
        responses: Object.entries(item[m]!.responses ?? {}).map(([status, r]) => ({
          status,
          description: described(r),
        })),
      })),
    );
    const schemas = Object.entries(doc.components?.schemas ?? {}).map(([name, s]) => ({
      name,
      description: s.description ?? "",
    }));
    return { title: doc.info.title, version: doc.info.version, summary: doc.info.summary ?? "", operations, schemas };
  },
};
