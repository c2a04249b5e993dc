// The Grafana dashboard, the Prometheus alert rules and the sample Prometheus configuration in
// deploy/: promtool accepts the rules and the configuration and the rules' unit tests pass (each
// alert fires on the series it is for), a real Prometheus on the sample configuration scrapes a
// credhook with its Basic credentials, and every metric the rules and the dashboard's queries name
// is one a running credhook serves.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse, stringify } from "yaml";
import { spawnTracked } from "./children.js";
import { AUTH, freePort, LOCAL_YAML, PROCESS_START_MS, startTestServer, until, type TestServer } from "./helpers.js";

const DEPLOY = fileURLToPath(new URL("../../../deploy/", import.meta.url));
const RULES = `${DEPLOY}prometheus/credhook-alerts.yaml`;
const SCRAPE_CONFIG = `${DEPLOY}prometheus/prometheus.yaml`;
const promtool = spawnSync("promtool", ["--version"], { encoding: "utf8" }).status === 0;
/** Debian's `prometheus` package (promtool's) has the server too. */
const prometheus = spawnSync("prometheus", ["--version"], { encoding: "utf8" }).status === 0;

/** The metric names a PromQL expression uses (credhook's and prom-client's defaults), a histogram's series names reduced to the histogram's. */
const metricsIn = (expr: string) =>
  [...expr.matchAll(/\b((?:credhook|process|nodejs)_[a-z0-9_]+)/g)].map((m) =>
    m[1]!.replace(/_(bucket|count|sum)$/, ""),
  );

const rules = parse(readFileSync(RULES, "utf8")) as {
  groups: Array<{ rules: Array<{ alert?: string; record?: string; expr: string }> }>;
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
    expect(check.stdout).toContain("SUCCESS: 10 rules found");
    const test = spawnSync("promtool", ["test", "rules", "credhook-alerts.test.yaml"], {
      cwd: `${DEPLOY}prometheus`,
      encoding: "utf8",
    });
    expect(test.status, test.stdout + test.stderr).toBe(0);
  });

  it("alerts on the store away, a gateway failing, abandoned/unsettled/unfinished records, brute force, dead and piling-up events — on metrics credhook serves", () => {
    const all = rules.groups.flatMap((g) => g.rules);
    expect(all.flatMap((r) => (r.record ? [r.record] : []))).toEqual(["credhook:scrape_target"]);
    const alerts = all.filter((r) => r.alert);
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

describe("deploy/prometheus/prometheus.yaml", () => {
  it.skipIf(!promtool)("passes `promtool check config` with the alert rules it loads", () => {
    const check = spawnSync("promtool", ["check", "config", "prometheus.yaml"], {
      cwd: `${DEPLOY}prometheus`,
      encoding: "utf8",
    });
    expect(check.status, check.stdout + check.stderr).toBe(0);
    expect(check.stdout).toContain("SUCCESS: 1 rule files found");
    expect(check.stdout).toContain("SUCCESS: 10 rules found");
  });

  it("scrapes /metrics with a user of server.auth.users, its password from a file (basic_auth password_file)", () => {
    const config = parse(readFileSync(SCRAPE_CONFIG, "utf8")) as {
      scrape_configs: Array<{ metrics_path: string; basic_auth: { username: string; password_file: string } }>;
    };
    expect(config.scrape_configs).toHaveLength(1);
    expect(config.scrape_configs[0]).toMatchObject({
      metrics_path: "/metrics",
      basic_auth: { username: "prometheus", password_file: "credhook-metrics-password" },
    });
  });

  it.skipIf(!prometheus)(
    "run by a real Prometheus (targets and intervals aside, as shipped): its scrapes of a credhook succeed and its rules find the target",
    async () => {
      const password = "prometheus-scrape-password";
      const yaml = LOCAL_YAML.replace(
        /^( +)- \{ username: portal, .*\n/m,
        (line, indent: string) => `${line}${indent}- { username: prometheus, password: "\${METRICS_PASSWORD}" }\n`,
      );
      expect(yaml).toContain("username: prometheus");
      const credhook = await startTestServer(yaml, { METRICS_PASSWORD: password });
      const dir = mkdtempSync(join(tmpdir(), "credhook-prometheus-"));
      try {
        // The sample beside the rules as shipped, the password file where it says; only its targets and
        // intervals changed (to this credhook, every second).
        cpSync(RULES, join(dir, "credhook-alerts.yaml"));
        writeFileSync(join(dir, "credhook-metrics-password"), `${password}\n`);
        const config = parse(readFileSync(SCRAPE_CONFIG, "utf8")) as {
          global: Record<string, string>;
          scrape_configs: Array<{ static_configs: Array<{ targets: string[] }> }>;
        };
        config.global = { scrape_interval: "1s", evaluation_interval: "1s" };
        config.scrape_configs[0]!.static_configs = [{ targets: [new URL(credhook.url).host] }];
        writeFileSync(join(dir, "prometheus.yaml"), stringify(config));
        const port = await freePort();
        const server = spawnTracked(
          "prometheus",
          [
            `--config.file=${join(dir, "prometheus.yaml")}`,
            `--storage.tsdb.path=${join(dir, "data")}`,
            `--web.listen-address=127.0.0.1:${port}`,
          ],
          { stdio: "ignore" },
        );
        const exited = new Promise((resolve) => server.once("exit", resolve));
        /** The series of an instant query on this Prometheus (none while it starts). */
        const query = async (
          promql: string,
        ): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>> => {
          const res = await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent(promql)}`).catch(
            () => undefined,
          );
          return res?.ok ? ((await res.json()) as { data: { result: [] } }).data.result : [];
        };
        try {
          const up = await until(
            "Prometheus's first scrape of credhook",
            async () => (await query("up")).at(0),
            PROCESS_START_MS,
          );
          expect(up.metric).toMatchObject({ job: "credhook", instance: new URL(credhook.url).host });
          expect(up.value[1], "up: the scrape failed (its credentials?)").toBe("1");
          expect((await query("credhook_build_info")).length).toBe(1);
          // the recording rule CredhookDown reads finds it, from its metrics as from its job
          const target = await until("credhook:scrape_target", async () =>
            (await query("credhook:scrape_target")).at(0),
          );
          expect(target.metric).toEqual({
            __name__: "credhook:scrape_target",
            job: "credhook",
            instance: up.metric.instance,
          });
        } finally {
          server.kill("SIGTERM");
          await exited;
        }
      } finally {
        await credhook.close();
        rmSync(dir, { recursive: true, force: true });
      }
    },
    PROCESS_START_MS + 30_000,
  );
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
