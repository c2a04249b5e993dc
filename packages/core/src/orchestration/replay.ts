/**
 * A replayed create (the portal retried, or created the app again): the live
 * credential is returned — its secret read back from a gateway that can, or
 * rotated everywhere to one new value where none can.
 */
import type { CreateCredentialsResponse } from "../contract.js";
import { CredhookError } from "../errors.js";
import type { CredentialRecord } from "../credential-record.js";
import { secretFingerprint } from "../events.js";
import type { OrchestrationContext } from "./context.js";
import type { CreateOutcome } from "./types.js";

/** Returns the live credential of a replayed create: secret read back, or rotated where it cannot be read. */
export async function replay(ctx: OrchestrationContext, rec: CredentialRecord): Promise<CreateOutcome> {
  const gateways = rec.bindings.map((b) => b.gateway);
  const reader = rec.bindings.find((b) => ctx.gateway(b.gateway).provider.capabilities.readsBackSecret);
  if (reader) {
    const gw = ctx.gateway(reader.gateway);
    try {
      const secret = await gw.provider.readSecret!(ctx.ref(rec, reader));
      return {
        response: responseOf(rec, secret.apiKey, secret.clientSecret),
        replayed: true,
        gateways,
        credentialId: rec.id,
      };
    } catch (err) {
      throw ctx.asTyped(err, reader.gateway);
    }
  }
  // No gateway can read the secret back: rotate it everywhere, to one new value.
  const value = rec.credentialType === "API_KEY" ? ctx.generateApiKey() : undefined;
  let clientSecret: string | undefined;
  for (const b of rec.bindings) {
    const gw = ctx.gateway(b.gateway);
    if (!gw.provider.rotateSecret) {
      throw new CredhookError(
        409,
        "CONFLICT",
        `the app already has a credential on gateway '${b.gateway}', whose secret can be neither read back nor rotated`,
        {
          messages: ["revoke the credential first, then create it again"],
          gateway: b.gateway,
        },
      );
    }
    try {
      const rotated = await gw.provider.rotateSecret(ctx.ref(rec, b), value);
      b.resources = rotated.resources;
      clientSecret ??= rotated.clientSecret;
    } catch (err) {
      throw ctx.asTyped(err, b.gateway);
    }
  }
  rec.updatedAt = ctx.nowIso();
  const secret = value ?? clientSecret;
  if (secret) rec.keyFingerprint = secretFingerprint(secret);
  await ctx.store.save(rec, [ctx.event("credential.updated", rec, { reason: "secret rotated by a replayed create" })]);
  ctx.logger.info({ credentialId: rec.id, gateways }, "replayed create: secret rotated");
  return { response: responseOf(rec, value, clientSecret), replayed: true, gateways, credentialId: rec.id };
}

/** The contract's create response of a record, with the secret (never stored) passed in. */
export function responseOf(rec: CredentialRecord, apiKey?: string, clientSecret?: string): CreateCredentialsResponse {
  const out: CreateCredentialsResponse =
    rec.credentialType === "API_KEY"
      ? { credentialType: "API_KEY", apiKeyId: rec.publicId, apiKey: apiKey! }
      : { credentialType: "CLIENT_CREDENTIALS", clientId: rec.publicId, clientSecret: clientSecret! };
  if (rec.customCredentials) out.customCredentials = { ...rec.customCredentials };
  return out;
}
