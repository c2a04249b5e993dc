/**
 * A minimal fake of AWS STS `AssumeRole` (awsQuery protocol: form-encoded
 * `Action=AssumeRole&…` on `POST /`, XML answer), so that the provider's
 * `roleArn` / `externalId` options are exercised by the unmodified credential
 * provider (https://docs.aws.amazon.com/STS/latest/APIReference/API_AssumeRole.html).
 */
import { randomUUID } from "node:crypto";
import type { ServerResponse } from "node:http";
import { type FakeClock, systemClock } from "../clock.js";
import { AwsFakeError, randomId } from "./faults.js";

/** One AssumeRole call the fake answered. */
export interface FakeAssumedRole {
  RoleArn: string;
  RoleSessionName: string;
  ExternalId?: string;
  /** Access key id of the caller (the source credentials). */
  callerAccessKeyId: string;
  /** Temporary access key id handed out (later calls are signed with it). */
  accessKeyId: string;
}

/** Roles the fake lets callers assume, and the calls it saw. */
export class StsFake {
  /** Every successful AssumeRole, in order. */
  readonly assumed: FakeAssumedRole[] = [];
  /** Role ARN → the ExternalId its trust policy requires (undefined: none). */
  readonly roles = new Map<string, string | undefined>();

  /** @param clock the clock of the credentials' `Expiration` (an hour after the call) @default systemClock */
  constructor(private readonly clock: FakeClock = systemClock) {}

  /** Makes `roleArn` assumable, optionally only with `externalId`. */
  addRole(roleArn: string, externalId?: string): void {
    this.roles.set(roleArn, externalId);
  }

  /** Handles one awsQuery request. */
  handle(form: URLSearchParams, callerAccessKeyId: string, res: ServerResponse): void {
    if (form.get("Action") !== "AssumeRole")
      throw new AwsFakeError(400, "InvalidAction", `Unsupported action ${form.get("Action")}`);
    const roleArn = form.get("RoleArn") ?? "";
    const session = form.get("RoleSessionName") ?? "";
    const externalId = form.get("ExternalId") ?? undefined;
    if (!/^[\w+=,.@-]{2,64}$/.test(session)) throw new AwsFakeError(400, "ValidationError", "Invalid RoleSessionName");
    if (!this.roles.has(roleArn) || this.roles.get(roleArn) !== externalId) {
      throw new AwsFakeError(
        403,
        "AccessDenied",
        `User: ${callerAccessKeyId} is not authorized to perform: sts:AssumeRole on resource: ${roleArn}`,
      );
    }
    const accessKeyId = `ASIA${randomId(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")}`;
    this.assumed.push({
      RoleArn: roleArn,
      RoleSessionName: session,
      ...(externalId !== undefined ? { ExternalId: externalId } : {}),
      callerAccessKeyId,
      accessKeyId,
    });
    const expiration = new Date(this.clock.now() + 3600_000).toISOString().replace(/\.\d+Z$/, "Z");
    res.writeHead(200, { "content-type": "text/xml" });
    res.end(
      `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult>` +
        `<Credentials><AccessKeyId>${accessKeyId}</AccessKeyId><SecretAccessKey>${randomId(40)}</SecretAccessKey>` +
        `<SessionToken>${randomId(64)}</SessionToken><Expiration>${expiration}</Expiration></Credentials>` +
        `<AssumedRoleUser><Arn>${roleArn.replace(":iam::", ":sts::").replace(":role/", ":assumed-role/")}/${session}</Arn>` +
        `<AssumedRoleId>AROA${randomId(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")}:${session}</AssumedRoleId></AssumedRoleUser>` +
        `</AssumeRoleResult><ResponseMetadata><RequestId>${randomUUID()}</RequestId></ResponseMetadata></AssumeRoleResponse>`,
    );
  }
}

/** Writes an STS (awsQuery) error. */
export function writeStsError(res: ServerResponse, err: AwsFakeError): void {
  res.writeHead(err.status, { "content-type": "text/xml" });
  res.end(
    `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>${err.errorType}</Code>` +
      `<Message>${err.message.replace(/[<&>]/g, "")}</Message></Error><RequestId>${randomUUID()}</RequestId></ErrorResponse>`,
  );
}
