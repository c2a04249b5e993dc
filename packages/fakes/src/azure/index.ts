/**
 * `@credhook/fakes/azure`: an in-process fake of the ARM API Management
 * endpoints, for tests, the server's integration tests and `credhook demo`.
 */
export { startApimFake, FAKE_API_VERSION } from "./apim-fake.js";
export type {
  ApimFake,
  ApimFakeOptions,
  BucketOptions,
  FakeSubscription,
  FakeUser,
  FakeRequestRecord,
  FaultSpec,
} from "./apim-fake.js";
