// The Grafana dashboard and the Prometheus alert rules in deploy/: promtool accepts the rules and
// their unit tests pass (each alert fires on the series it is for), and every metric they and the
// dashboard's queries name is one a running credhook serves.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { AUTH, LOCAL_YAML, startTestServer, type TestServer } from "./helpers.js";

const DEPLOY = fileURLToPath(new URL("../../../deploy/", import.meta.url));
const RULES = `${DEPLOY}prometheus/credhook-alerts.yaml`;
const promtool = spawnSync("promtool", ["--version"], { encoding: "utf8" }).status === 0;

/** The metric names a PromQL expression uses (credhook's and prom-client's defaults), a histogram's series names reduced to the histogram's. */
const metricsIn = (expr: string) =>
  [...expr.matchAll(/\b((?:credhook|process|nodejs)_[a-z0-9_]+)/g)].map((m) =>
    m[1]!.replace(/_(bucket|count|sum)$/, ""),
  );

const rules = parse(readFileSync(RULES, "utf8")) as {
  groups: Array<{ rules: Array<{ alert: string; expr: string }> }>;
};
const dashboard = JSON.parse(readFileSync(`${DEPLOY}grafana/credhook-dashboard.json`, "utf8")) as {
  uid: string;
  panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
};

let s: TestServer;
let served: Set<string>;
beforeAll(async () => {
  s = await startTestServer(LOCAL_YAML);
  const text = await (await fetch(`${s.url}/metrics`, { headers: { authorization: AUTH } })).text();
  served = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
});
afterAll(() => s?.close());

describe("deploy/prometheus/credhook-alerts.yaml", () => {
  it.skipIf(!promtool)("passes `promtool check rules` and its unit tests (`promtool test rules`)", () => {
    const check = spawnSync("promtool", ["check", "rules", RULES], { encoding: "utf8" });
    expect(check.status, check.stdout + check.stderr).toBe(0);
    expect(check.stdout).toContain("SUCCESS: 9 rules found");
    const test = spawnSync("promtool", ["test", "rules", "credhook-alerts.test.yaml"], {
      cwd: `${DEPLOY}prometheus`,
      encoding: "utf8",
    });
    expect(test.status, test.stdout + test.stderr).toBe(0);
  });

  it("alerts on the store away, a gateway failing, abandoned/unsettled/unfinished records, brute force, dead and piling-up events — on metrics credhook serves", () => {
    const alerts = rules.groups.flatMap((g) => g.rules);
    expect(alerts.map((r) => r.alert).sort()).toEqual([
      "CredhookAbandonedRecordsPilingUp",
      "CredhookBruteForce",
      "CredhookDown",
      "CredhookEventsBacklog",
      "CredhookEventsDead",
      "CredhookGatewayFailing",
      "CredhookStoreDown",
      "CredhookUnfinishedRecords",
      "CredhookUnsettledRecordsPilingUp",
    ]);
    for (const r of alerts) for (const m of metricsIn(r.expr)) expect(served, `${r.alert}: ${m}`).toContain(m);
  });
});

describe("deploy/grafana/credhook-dashboard.json", () => {
  it("every panel queries metrics credhook serves, through the dashboard's Prometheus data source", () => {
    expect(dashboard.uid).toBe("credhook");
    expect(dashboard.panels.length).toBeGreaterThan(10);
    const named = new Set<string>();
    for (const p of dashboard.panels) {
      expect(p.targets.length, p.title).toBeGreaterThan(0);
      for (const t of p.targets) {
        expect((t as { datasource?: { uid?: string } }).datasource?.uid, p.title).toBe("${datasource}");
        for (const m of metricsIn(t.expr)) {
          expect(served, `${p.title}: ${m}`).toContain(m);
          named.add(m);
        }
      }
    }
    // what the alerts watch is on the dashboard too
    for (const m of [
      "credhook_store_up",
      "credhook_records_abandoned",
      "credhook_records_unsettled",
      "credhook_gateway_call_duration_seconds",
      "credhook_errors_total",
      "credhook_events",
    ])
      expect(named).toContain(m);
  });
});

describe("the store's gauges", () => {
  it("say the store is up and count its records at each scrape", async () => {
    const text = await (await fetch(`${s.url}/metrics`, { headers: { authorization: AUTH } })).text();
    expect(text).toMatch(/^credhook_store_up 1$/m);
    expect(text).toMatch(/^credhook_records_abandoned 0$/m);
    expect(text).toMatch(/^credhook_records_unsettled 0$/m);
    expect(text).toMatch(/^credhook_records_unfinished 0$/m);
  });

  it("credhook_store_up is 0 when the store does not answer", async () => {
    const other = await startTestServer(LOCAL_YAML);
    try {
      await other.credhook.store.close();
      const text = await (await fetch(`${other.url}/metrics`, { headers: { authorization: AUTH } })).text();
      expect(text).toMatch(/^credhook_store_up 0$/m);
    } finally {
      await other.close().catch(() => undefined);
    }
  });
});
