/**
 * credhook's mark on what a provider makes, and the ownership rule every provider applies before
 * it changes or deletes anything (the rules of `packages/core/src/provider.ts`): a resource is this
 * gateway's when it carries the gateway's mark, and a credential's when the mark also names that
 * credential id. One rule here instead of a copy in every provider, and the mark written in the
 * three kinds of metadata gateways keep:
 *
 * - {@link tagMarker}: a list of string tags (Kong's entity `tags`): `credhook`,
 *   `credhook-gw:<gateway>` (URL-encoded: Kong tags hold no `,`, `/` or space),
 *   `credhook-cred:<credential id>`;
 * - {@link attributeMarker}: a list of name/value attributes (Apigee's app `attributes`):
 *   `credhook-gateway` = the gateway, `credhook-credential` = the credential id;
 * - {@link keyValueMarker}: a map of tags (most clouds' resource tags or labels), with the same
 *   two names.
 *
 * Credential ids are compared in lower case (they are UUIDs; a gateway may keep the case it was given).
 */

/** How credhook's mark is written into one kind of metadata `M` and read back from it. */
export interface Marker<M> {
  /** The metadata that marks a resource made by this gateway for `credentialId`. */
  mark(credentialId: string): M;
  /** The part of the mark that names the gateway: what a list of this gateway's resources is filtered by. */
  gatewayMark(): M;
  /**
   * The credential id this gateway's mark on `metadata` names, in lower case; `""` when the metadata
   * carries the gateway's mark without a credential id; undefined when it carries no mark of this gateway.
   */
  credentialOf(metadata: M | null | undefined): string | undefined;
  /**
   * `metadata` (of a resource made outside credhook, for `adopt`) with the mark of `credentialId`
   * added after what it holds (tags: each once; attributes and key/value tags: the mark's value
   * under each of its names).
   */
  withMark(metadata: M | null | undefined, credentialId: string): M;
  /**
   * Any credhook mark `metadata` carries (this gateway's or another's), as it reads there
   * (`credhook-gw:kong-eu`, `credhook-gateway=apigee-eu`), for a message; undefined when it carries none.
   */
  anyMarkOf(metadata: M | null | undefined): string | undefined;
}

/**
 * The ownership rule: a resource whose mark names `mark` (what {@link Marker.credentialOf} read) is
 * the caller's when the mark is this gateway's and, unless `credentialId` is empty (core lost the
 * record: the gateway's mark suffices), names that credential.
 */
export function ownsMark(mark: string | undefined, credentialId: string): mark is string {
  return mark !== undefined && (credentialId === "" || mark === credentialId.toLowerCase());
}

/** The tag that marks everything credhook makes on a tag-keeping gateway, whatever the gateway. */
export const CREDHOOK_TAG = "credhook";
/** Prefix of the tag naming the gateway (`credhook-gw:<gateway, URL-encoded>`). */
export const GATEWAY_TAG_PREFIX = "credhook-gw:";
/** Prefix of the tag naming the credential (`credhook-cred:<credential id, lower case>`). */
export const CREDENTIAL_TAG_PREFIX = "credhook-cred:";

/** A name as a tag value: URL-encoded, since tags (Kong's) hold no `,`, `/` or non-printable characters. */
export function tagValue(name: string): string {
  return encodeURIComponent(name);
}

/**
 * The mark as string tags (see the module comment): `mark(id)` is
 * `["credhook", "credhook-gw:<gateway>", "credhook-cred:<id>"]`, `gatewayMark()` `["credhook-gw:<gateway>"]`.
 * @param gateway the gateway's name (its YAML key under `gateways:`)
 */
export function tagMarker(gateway: string): Marker<readonly string[]> {
  const gatewayTag = `${GATEWAY_TAG_PREFIX}${tagValue(gateway)}`;
  const mark = (credentialId: string) => [
    CREDHOOK_TAG,
    gatewayTag,
    `${CREDENTIAL_TAG_PREFIX}${credentialId.toLowerCase()}`,
  ];
  return {
    mark,
    gatewayMark: () => [gatewayTag],
    credentialOf(tags) {
      if (!tags?.includes(gatewayTag)) return undefined;
      const tag = tags.find((t) => t.startsWith(CREDENTIAL_TAG_PREFIX));
      return tag?.slice(CREDENTIAL_TAG_PREFIX.length).toLowerCase() ?? "";
    },
    withMark: (tags, credentialId) => [...new Set([...(tags ?? []), ...mark(credentialId)])],
    anyMarkOf: (tags) => tags?.find((t) => t.startsWith(GATEWAY_TAG_PREFIX) || t.startsWith(CREDENTIAL_TAG_PREFIX)),
  };
}

/** The names under which {@link attributeMarker} and {@link keyValueMarker} write the gateway and the credential id. */
export interface MarkNames {
  /** @default "credhook-gateway" */
  gateway: string;
  /** @default "credhook-credential" */
  credential: string;
}

/** The default {@link MarkNames}. */
export const MARK_NAMES: MarkNames = { gateway: "credhook-gateway", credential: "credhook-credential" };

/**
 * The mark as a map of tags (see the module comment): `mark(id)` is
 * `{ "credhook-gateway": <gateway>, "credhook-credential": <id> }`.
 * @param gateway the gateway's name (its YAML key under `gateways:`)
 * @param names the two tags' names, when the cloud's rules for tag keys need others
 */
export function keyValueMarker(
  gateway: string,
  names: MarkNames = MARK_NAMES,
): Marker<Readonly<Record<string, string>>> {
  const mark = (credentialId: string) => ({ [names.gateway]: gateway, [names.credential]: credentialId.toLowerCase() });
  return {
    mark,
    gatewayMark: () => ({ [names.gateway]: gateway }),
    credentialOf: (tags) =>
      tags?.[names.gateway] === gateway ? (tags[names.credential] ?? "").toLowerCase() : undefined,
    withMark: (tags, credentialId) => ({ ...tags, ...mark(credentialId) }),
    anyMarkOf(tags) {
      const name = [names.gateway, names.credential].find((n) => tags?.[n] !== undefined);
      return name === undefined ? undefined : `${name}=${tags?.[name]}`;
    },
  };
}

/** One name/value attribute (Apigee's `{ name, value }`). */
export interface MarkAttribute {
  name: string;
  value: string;
}

/**
 * The mark as name/value attributes (see the module comment): `mark(id)` is
 * `[{ name: "credhook-gateway", value: <gateway> }, { name: "credhook-credential", value: <id> }]`.
 * @param gateway the gateway's name (its YAML key under `gateways:`)
 * @param names the two attributes' names
 */
export function attributeMarker(gateway: string, names: MarkNames = MARK_NAMES): Marker<readonly MarkAttribute[]> {
  const ours = new Set([names.gateway, names.credential]);
  const attributeValue = (attributes: readonly MarkAttribute[] | null | undefined, name: string) =>
    attributes?.find((a) => a.name === name)?.value;
  const mark = (credentialId: string) => [
    { name: names.gateway, value: gateway },
    { name: names.credential, value: credentialId.toLowerCase() },
  ];
  return {
    mark,
    gatewayMark: () => [{ name: names.gateway, value: gateway }],
    credentialOf: (attributes) =>
      attributeValue(attributes, names.gateway) === gateway
        ? (attributeValue(attributes, names.credential) ?? "").toLowerCase()
        : undefined,
    withMark: (attributes, credentialId) => [
      ...(attributes ?? []).filter((a) => !ours.has(a.name)),
      ...mark(credentialId),
    ],
    anyMarkOf(attributes) {
      const a = attributes?.find((x) => ours.has(x.name));
      return a ? `${a.name}=${a.value}` : undefined;
    },
  };
}
