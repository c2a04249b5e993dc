// The Lambda bundle carries its providers' and store's options validators compiled ahead of time,
// under the keys core's compileSchema looks them up by (the schema text and each option set core
// compiles options with), so that its cold start compiles no schema.
import { describe, expect, it } from "vitest";
import { precompiledKey } from "@credhook/core";
import type { ProviderFactory } from "@credhook/core/provider";
import type { StoreFactory } from "@credhook/core/store";
import aws from "@credhook/provider-aws";
import postgres from "@credhook/store-postgres";
import { precompiledOptionValidators } from "../../../scripts/lambda-bundle.mjs";
import { OPTIONS_COMPILE_SETS } from "../../../schema/validators.ts";

describe("the Lambda bundle's precompiled options validators", () => {
  it("are keyed as compileSchema looks up the AWS provider's and the PostgreSQL store's options schemas", () => {
    const modules = precompiledOptionValidators(["@credhook/provider-aws", "@credhook/store-postgres"]);
    const expected = [aws as ProviderFactory, postgres as StoreFactory].flatMap((f) =>
      OPTIONS_COMPILE_SETS.map((set) => precompiledKey(f.optionsSchema as object, set)),
    );
    expect(modules.map((m) => m.key)).toEqual(expected);
    for (const m of modules) expect(m.code).toMatch(/export default validate\d+;/);
  });
});
