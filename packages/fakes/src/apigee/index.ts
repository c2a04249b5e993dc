/**
 * `@credhook/fakes/apigee`: an in-process fake of the Apigee X management API
 * (developers, developer apps, app keys, API products), for tests and `credhook demo`.
 */
export { startApigeeFake } from "./management-fake.js";
export type {
  ApigeeFake,
  ApigeeFakeOptions,
  ApigeeApp,
  ApigeeAttribute,
  ApigeeCredential,
  ApigeeDeveloper,
} from "./management-fake.js";
export type { JsonFakeFault, JsonFakeRecord } from "../shared/json-fake.js";
