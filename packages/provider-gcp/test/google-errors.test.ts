import { describe, expect, it } from "vitest";
import { GoogleError, Status } from "google-gax";
import { isTransient, readFailure, toTypedError } from "../src/google-errors.js";

function googleError(code: Status, message: string, statusDetails?: unknown[]): GoogleError {
  const e = new GoogleError(message);
  e.code = code;
  if (statusDetails) e.statusDetails = statusDetails as GoogleError["statusDetails"];
  return e;
}

describe("reading client errors", () => {
  it("reads a GoogleError (a failed long-running operation) by its gRPC code and RetryInfo", () => {
    expect(readFailure(googleError(Status.NOT_FOUND, "gone"))).toEqual({ status: "NOT_FOUND", message: "gone" });
    expect(
      readFailure(
        googleError(Status.RESOURCE_EXHAUSTED, "slow down", [{ retryDelay: { seconds: "3", nanos: 500_000_000 } }]),
      ),
    ).toEqual({
      status: "RESOURCE_EXHAUSTED",
      message: "slow down",
      retryAfterS: 3.5,
    });
  });

  it("reads an HTTP error without a JSON body by its status code", () => {
    const e = Object.assign(new Error("<html>Bad Gateway</html>"), {
      status: 502,
      response: { status: 502, headers: new Headers() },
    });
    expect(readFailure(e)).toEqual({ status: "INTERNAL", httpStatus: 502, message: "HTTP 502" });
    expect(isTransient(readFailure(e))).toBe(true);
  });

  it("treats connection failures as transient and the operation deadline as final", () => {
    expect(isTransient(readFailure(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" })))).toBe(
      true,
    );
    expect(isTransient(readFailure(googleError(Status.DEADLINE_EXCEEDED, "Total timeout exceeded")))).toBe(false);
    expect(isTransient(readFailure(googleError(Status.UNAVAILABLE, "try again")))).toBe(true);
    expect(isTransient(readFailure(googleError(Status.RESOURCE_EXHAUSTED, "quota")))).toBe(false);
  });

  it("maps to typed errors whose cause is a plain Error, never the client's error (its config holds the token)", () => {
    const raw = Object.assign(
      new Error('{"error":{"code":403,"message":"Permission denied on projects/p","status":"PERMISSION_DENIED"}}'),
      {
        status: 403,
        config: { headers: { Authorization: "Bearer ya29.secret-token" } },
        response: { status: 403, headers: new Headers() },
      },
    );
    const typed = toTypedError(raw, "getKey k1", "g");
    expect(typed).toMatchObject({ status: 502, code: "UPSTREAM_FAILED" });
    expect(typed.message).toBe(
      "[gateway g] getKey k1: permission denied (403 PERMISSION_DENIED); the principal needs roles/serviceusage.apiKeysAdmin on the project",
    );
    expect(typed.cause).not.toBe(raw);
    expect(JSON.stringify(typed.cause, Object.getOwnPropertyNames(typed.cause))).not.toContain("ya29");
    expect((typed.cause as Error).message).toContain("Permission denied on projects/p");
  });

  it("shows Google's message for a 400 (a rejected field) only", () => {
    const raw = Object.assign(
      new Error(
        '{"error":{"code":400,"message":"display_name must be at most 63 characters long.","status":"INVALID_ARGUMENT"}}',
      ),
      {
        status: 400,
        response: { status: 400, headers: new Headers() },
      },
    );
    expect(toTypedError(raw, "createKey k1", "g").message).toBe(
      "[gateway g] createKey k1 failed: 400 INVALID_ARGUMENT: display_name must be at most 63 characters long.",
    );
  });
});
