/** Test helper: the unmodified official client pointed at a running API Keys fake. */
import { ApiKeysClient } from "@google-cloud/apikeys";
import { OAuth2Client } from "google-auth-library";
import type { ApiKeysFake } from "@credhook/fakes/gcp";

/** An ApiKeysClient using the REST transport over plain HTTP against `fake`, with a static token. */
export function rawClient(fake: ApiKeysFake, token = "fake-token"): ApiKeysClient {
  const authClient = new OAuth2Client();
  authClient.setCredentials({ access_token: token, expiry_date: Date.now() + 3.6e6 });
  return new ApiKeysClient({
    fallback: true,
    protocol: "http",
    apiEndpoint: "127.0.0.1",
    port: fake.port,
    authClient,
  } as ConstructorParameters<typeof ApiKeysClient>[0]);
}

/** HTTP status of a client error (GaxiosError `status`, or the HTTP code inside a GoogleError's body). */
export function httpStatusOf(err: unknown): number | undefined {
  const e = err as { status?: unknown; code?: unknown };
  if (typeof e.status === "number") return e.status;
  if (typeof e.code === "number" && e.code >= 100) return e.code;
  return undefined;
}

/** The `error` object of a Google JSON error carried by a client error's message. */
export function googleErrorOf(err: unknown): { code: number; status: string; message: string; details?: unknown[] } {
  return (
    JSON.parse((err as Error).message) as {
      error: { code: number; status: string; message: string; details?: unknown[] };
    }
  ).error;
}
