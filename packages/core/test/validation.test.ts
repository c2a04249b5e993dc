/** compileSchema: one compiled validator per schema object and option set, shared by every caller. */
import { describe, expect, it } from "vitest";
import { compileSchema } from "@credhook/core";

describe("compileSchema", () => {
  const schema = {
    type: "object",
    properties: { port: { type: "integer", default: 8080 } },
    additionalProperties: false,
  };

  it("compiles a schema object once per option set and hands every caller that validator", () => {
    const first = compileSchema(schema, { coerceTypes: true, useDefaults: true });
    expect(compileSchema(schema, { coerceTypes: true, useDefaults: true })).toBe(first);
    expect(compileSchema(schema)).not.toBe(first);
    expect(compileSchema({ ...schema })).not.toBe(compileSchema(schema));
  });

  it("validates with the options it was compiled with: coercion and defaults only when asked", () => {
    const lenient = compileSchema(schema, { coerceTypes: true, useDefaults: true });
    const given = { port: "9090" };
    expect(lenient(given)).toBe(true);
    expect(given).toEqual({ port: 9090 });
    const empty = {};
    expect(lenient(empty)).toBe(true);
    expect(empty).toEqual({ port: 8080 });

    const strict = compileSchema(schema);
    const untouched = {};
    expect(strict({ port: "9090" })).toBe(false);
    expect(strict.errors?.[0]?.instancePath).toBe("/port");
    expect(strict(untouched)).toBe(true);
    expect(untouched).toEqual({});
  });
});
