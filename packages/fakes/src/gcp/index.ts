/**
 * `@credhook/fakes/gcp`: an in-process fake of the Google Cloud API Keys
 * v2 REST API, for tests, the server's integration tests and `credhook demo`.
 *
 * ```ts
 * import { startApiKeysFake } from "@credhook/fakes/gcp";
 * const fake = await startApiKeysFake({ projectId: "demo" });
 * // gateway options: { projectId: "demo", endpoint: fake.url, credentials: { type: "static-token" } }
 * ```
 */
export { startApiKeysFake } from "./api-keys-fake.js";
export type {
  ApiKeysFake,
  ApiKeysFakeControl,
  ApiKeysFakeOptions,
  FakeApiTarget,
  FakeFault,
  FakeKey,
  FakeRequestFilter,
  FakeRequestRecord,
  FakeRpc,
} from "./api-keys-fake.js";
