/**
 * What is Apigee's in how the provider calls the management API
 * (`apigee.googleapis.com/v1/organizations/{org}`, through core's `JsonApiClient`: fetch, time
 * limit, bounded retries of 429 RESOURCE_EXHAUSTED, typed errors): the Bearer token from
 * google-auth-library (Application Default Credentials, a key file, or a fixed token for local
 * fakes), Google's error message and the IAM permissions a 401/403 names.
 *
 * Errors are Google's `{"error":{"code","message","status"}}`
 * (https://cloud.google.com/apis/design/errors).
 */
import { GoogleAuth, OAuth2Client } from "google-auth-library";

/** How the provider authenticates (the `credentials` option). */
export type ApigeeCredentials =
  | { type: "application-default" }
  | { type: "key-file"; path: string }
  | { type: "static-token"; token?: string };

/** The OAuth scope of the management API (https://cloud.google.com/apigee/docs/reference/apis/apigee/rest). */
export const CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform";

/** What the caller's principal needs; said with every 401/403. */
export const APIGEE_PERMISSIONS =
  "grant the service account roles/apigee.developerAdmin on the organisation's project, or a custom role with apigee.organizations.get, apigee.apiproducts.get, apigee.apps.get/list, apigee.developers.get/create, apigee.developerapps.get/create/delete/manage and apigee.appkeys.get/create/delete/manage";

/** The Authorization header source for `credentials` (google-auth-library refreshes real tokens itself). */
export function authHeaders(credentials: ApigeeCredentials): () => Promise<Record<string, string>> {
  let client: GoogleAuth | OAuth2Client;
  if (credentials.type === "static-token") {
    const c = new OAuth2Client();
    // far-future expiry: a fixed token is never refreshed (local fakes only)
    c.setCredentials({ access_token: credentials.token ?? "fake", expiry_date: Date.now() + 10 * 365 * 24 * 3.6e6 });
    client = c;
  } else if (credentials.type === "key-file") {
    client = new GoogleAuth({ keyFilename: credentials.path, scopes: [CLOUD_PLATFORM_SCOPE] });
  } else {
    client = new GoogleAuth({ scopes: [CLOUD_PLATFORM_SCOPE] });
  }
  return async (): Promise<Record<string, string>> => {
    const headers = await client.getRequestHeaders();
    const authorization = headers.get("authorization");
    return authorization ? { authorization } : {};
  };
}

/** Google's error message (`error.message`), after its `status` when there is one. */
export function googleMessage(json: unknown): string | undefined {
  const e = (json as { error?: { message?: unknown; status?: unknown } } | undefined)?.error;
  if (typeof e?.message !== "string") return undefined;
  return typeof e.status === "string" ? `${e.status}: ${e.message}` : e.message;
}
