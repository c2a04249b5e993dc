import { describe, expect, it } from "vitest";
import { createRouter } from "../src/index.js";
import { Unroutable } from "../src/entry/errors.js";

describe("createRouter", () => {
  const router = createRouter([
    { apis: ["a1b2c3d4e5", "f6g7h8i9j0"], gateway: "aws-us" },
    { apis: ["orders-*", "*-eu"], gateway: "azure-eu" },
    { apis: ["orders-legacy"], gateway: "never" },
    { default: "local" },
  ]);

  it("matches exact ids, then globs, first match wins, then the default", () => {
    expect(router.resolve("a1b2c3d4e5")).toBe("aws-us");
    expect(router.resolve("orders-v2")).toBe("azure-eu");
    expect(router.resolve("orders-legacy")).toBe("azure-eu");
    expect(router.resolve("billing-eu")).toBe("azure-eu");
    expect(router.resolve("orders")).toBe("local");
    expect(router.resolve("a1b2c3d4e")).toBe("local");
  });

  it("treats regex characters in globs literally", () => {
    const r = createRouter([{ apis: ["v1.api-*"], gateway: "g" }]);
    expect(r.resolve("v1.api-x")).toBe("g");
    expect(r.resolve("v1xapi-x")).toBeUndefined();
  });

  it("resolveAll throws Unroutable naming every unmatched id", () => {
    const r = createRouter([{ apis: ["known"], gateway: "g" }]);
    expect(r.resolveAll(["known"]).get("known")).toBe("g");
    expect(() => r.resolveAll(["known", "x", "y"])).toThrow(Unroutable);
    expect(() => r.resolveAll(["known", "x", "y"])).toThrow("no route matches API ids 'x', 'y'");
  });
});
