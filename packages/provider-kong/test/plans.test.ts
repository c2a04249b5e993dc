// Usage plans on Kong's rate-limiting plugin: limits Kong refuses (a longer window's limit lower than a shorter
// one's) are the configuration's problem — refused when the gateway is built, 422 for a request whose plans merge
// into such limits, before anything is written — and an update that changes nothing writes nothing.
import { describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import type { CredhookError } from "@credhook/core/errors";
import type { GatewayApi, Logger } from "@credhook/core/provider";
import { createKongProvider } from "../src/index.js";
import { accessOf, app, createRef, GATEWAY, typedError, useFake } from "./helpers.js";

/** Plans each Kong accepts alone; `fast` with `slow` merges into second 50 above minute 30, which it refuses. */
const plans = { fast: { second: 50 }, slow: { minute: 30, hour: 1000 }, gold: { minute: 600, hour: 20000 } };
const t = useFake();
/** The fake's writes (every request but a read) from `from` on. */
const writes = (from = 0) =>
  t.fake.requests
    .slice(from)
    .filter((r) => r.method !== "GET")
    .map((r) => `${r.method} ${r.path.replace(/[0-9a-f-]{36}/g, "{id}")}`);
const on = (usagePlans: string[]): GatewayApi[] => [
  { id: "orders-api", usagePlans },
  { id: "echo", usagePlans: [] },
];
const update = (ref: Awaited<ReturnType<typeof createRef>>, previous: GatewayApi[], desired: GatewayApi[]) =>
  t.make({ plans }).update({ ...ref, previous, desired, changes: [] });

/** A logger that keeps its warnings. */
function recordingLogger(): Logger & { warnings: Array<[object, string | undefined]> } {
  const warnings: Array<[object, string | undefined]> = [];
  const logger = {
    warnings,
    debug() {},
    info() {},
    warn: (obj: object, msg?: string) => void warnings.push([obj, msg]),
    error() {},
    child: () => logger,
  };
  return logger;
}

describe("plans Kong's rate-limiting plugin refuses", () => {
  it("a plan whose longer window allows fewer requests is a configuration error naming its YAML path and the periods", () => {
    const build = () =>
      createKongProvider(
        { adminUrl: t.fake.url, plans: { ...plans, bad: { minute: 100, hour: 50 }, worse: { second: 9, year: 3 } } },
        { gateway: "kong", configPath: "gateways.kong.options", credentialType: "API_KEY", logger: recordingLogger() },
      );
    let err: CredhookError | undefined;
    try {
      build();
    } catch (e) {
      err = e as CredhookError;
    }
    expect(err?.code).toBe("CONFIG_INVALID");
    expect(err?.messages).toHaveLength(2);
    expect(err?.messages[0]).toMatch(
      /^\[provider-kong\] gateways\.kong\.options\.plans\.bad: minute 100 above hour 50: Kong refuses this plan \(.*second <= minute <= hour <= day <= month <= year/,
    );
    expect(err?.messages[1]).toMatch(
      /^\[provider-kong\] gateways\.kong\.options\.plans\.worse: second 9 above year 3:/,
    );
    expect(t.fake.requests).toEqual([]); // refused before any call
  });

  it("plans valid alone but not together are accepted, with a warning naming each pair that one app cannot have", () => {
    const logger = recordingLogger();
    createKongProvider(
      { adminUrl: t.fake.url, plans },
      { gateway: GATEWAY, configPath: `gateways.${GATEWAY}.options`, credentialType: "API_KEY", logger },
    );
    expect(logger.warnings).toHaveLength(1);
    expect(logger.warnings[0]![0]).toEqual({
      at: `gateways.${GATEWAY}.options.plans`,
      conflicts: ["'fast' + 'slow': second 50 (plan 'fast') above minute 30 (plan 'slow')"],
    });
    expect(logger.warnings[0]![1]).toContain("answers 422");
  });

  it("a create whose plans merge into limits Kong refuses answers 422 naming the plans and the periods; nothing is written", async () => {
    const err = await typedError(
      t
        .make({ plans })
        .create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis: on(["slow", "fast"]) }),
    );
    expect([err.status, err.code]).toEqual([422, "POLICY_VIOLATION"]);
    expect(err.message).toContain(
      "usage plans 'fast', 'slow' cannot be combined on this gateway: merged (each window the largest limit of the plans) they give second 50 (plan 'fast') above minute 30 (plan 'slow')",
    );
    expect(err.partial).toBeUndefined();
    expect(writes()).toEqual([]);
    expect(t.fake.consumers()).toEqual([]);
  });

  it("an update adding a plan that cannot join the app's others answers 422; the consumer keeps its plugin as it was", async () => {
    const ref = await createRef(t.make({ plans }), on(["slow"]));
    const before = t.fake.requests.length;
    const err = await typedError(update(ref, on(["slow"]), on(["slow", "fast"])));
    expect([err.status, err.code]).toEqual([422, "POLICY_VIOLATION"]);
    expect(err.message).toContain("second 50 (plan 'fast') above minute 30 (plan 'slow')");
    expect(writes(before)).toEqual([]);
    expect(accessOf(t.fake, ref.nativeId)).toMatchObject({ plans: ["slow"], config: { minute: 30, hour: 1000 } });
  });
});

describe("an update writes only what changes", () => {
  it("the same APIs and plans again: no write to Kong at all", async () => {
    const ref = await createRef(t.make({ plans }), on(["gold"]));
    const before = t.fake.requests.length;
    expect((await update(ref, on(["gold"]), on(["gold"]))).resources).toEqual(ref.resources);
    expect(writes(before)).toEqual([]);
  });

  it("a new API only: its ACL group is added and the plugin left alone; new limits: one PATCH of the plugin", async () => {
    const ref = await createRef(t.make({ plans }), on(["gold"]));
    let before = t.fake.requests.length;
    const more = [...on(["gold"]), { id: "billing", usagePlans: [] }];
    await update(ref, on(["gold"]), more);
    expect(writes(before)).toEqual(["POST /consumers/{id}/acls"]);
    before = t.fake.requests.length;
    await update(ref, more, on(["slow"]));
    expect(writes(before)).toEqual(["PATCH /plugins/{id}", "DELETE /consumers/{id}/acls/{id}"]);
    expect(accessOf(t.fake, ref.nativeId)).toMatchObject({
      groups: ["echo", "orders"],
      plans: ["slow"],
      config: { second: null, minute: 30, hour: 1000 },
    });
  });
});
