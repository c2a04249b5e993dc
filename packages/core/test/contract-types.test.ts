/**
 * The contract's TypeScript types (src/openapi.generated.ts) are what openapi-typescript
 * generates from the OpenAPI document today, and contract.ts's names follow the document.
 */
import { readFileSync } from "node:fs";
import { describe, expect, expectTypeOf, it } from "vitest";
import { buildContractTypes, CONTRACT_TYPES_FILE } from "../../../schema/contract-types.js";
import type {
  ApiChange,
  CreateCredentialsRequest,
  CustomCredentials,
  ErrorResponse,
  UpdateCredentialsRequest,
} from "../src/index.js";

describe("the contract's generated types", () => {
  it("are what `pnpm schema` writes from the current OpenAPI document (run `pnpm schema` when this fails)", async () => {
    expect(readFileSync(CONTRACT_TYPES_FILE, "utf8")).toBe(await buildContractTypes());
  });

  it("start with a header that says they are generated and how to regenerate them", () => {
    const head = readFileSync(CONTRACT_TYPES_FILE, "utf8").slice(0, 400);
    expect(head).toContain("GENERATED FILE, DO NOT EDIT");
    expect(head).toContain("pnpm schema");
  });

  it("keep the request bodies open to fields the portal adds later, and customCredentials free-form", () => {
    expectTypeOf<CreateCredentialsRequest>().toHaveProperty("later");
    expectTypeOf<UpdateCredentialsRequest["anything"]>().toEqualTypeOf<unknown>();
    expectTypeOf<CustomCredentials>().toEqualTypeOf<{ [key: string]: unknown }>();
    expectTypeOf<ApiChange["action"]>().toEqualTypeOf<"NONE" | "ADDED" | "REMOVED">();
    expectTypeOf<ErrorResponse>().toEqualTypeOf<{
      timestamp: string;
      status: number;
      error: string;
      messages: string[];
      path: string;
    }>();
  });
});
