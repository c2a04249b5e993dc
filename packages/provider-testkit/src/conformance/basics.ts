/** The `basics` group: the provider declares the credential type it is tested for, and its health check answers. */
import type { ConformanceCase, TypeSuite } from "./harness.js";
import type { ConformanceTestContext } from "./options.js";

/** The `basics` tests, in their order. */
export const basicsTests: ConformanceCase[] = [
  { group: "basics", name: "declares the credential type it is tested for", check: declaresItsType },
  { group: "basics", name: "health() resolves when the gateway is reachable", check: healthResolves },
];

/** Declares the credential type it is tested for. */
async function declaresItsType(s: TypeSuite, ctx: ConformanceTestContext): Promise<void> {
  const provider = await s.make(ctx);
  await provider.close?.();
}

/** Health() resolves when the gateway is reachable. */
async function healthResolves(s: TypeSuite, ctx: ConformanceTestContext): Promise<void> {
  const provider = await s.make(ctx);
  await provider.health();
  await provider.close?.();
}
