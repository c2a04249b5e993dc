/**
 * `@credhook/fakes/kong`: an in-process fake of the Kong Gateway Admin API
 * (consumers, key-auth, ACLs, plugins), for tests and `credhook demo`.
 */
export { startKongFake } from "./admin-fake.js";
export type { KongFake, KongFakeOptions, KongConsumer, KongKeyAuth, KongAcl, KongPlugin } from "./admin-fake.js";
export type { JsonFakeFault, JsonFakeRecord } from "../shared/json-fake.js";
