/**
 * A cloud outage under portal load (issue: "when the parts credhook stands on fail"): AWS API
 * Gateway answers every call 503 for `CREDHOOK_OUTAGE_S` seconds (60 by default, as the issue
 * asks) while portal calls keep coming for apps on AWS and on the embedded gateway. Once the
 * AWS gateway's circuit breaker is open its requests answer 503 + Retry-After at once with no
 * cloud call (a create refused so writes nothing at all, store included; how fast is printed, not
 * asserted: on a busy machine it is the machine's figure), the outage
 * costs fewer than 1.5 cloud calls per portal call, /v1/health names the gateway, the other
 * gateway's apps are unaffected, the breaker half-opens and closes by itself once AWS is back,
 * and no key is left that the portal did not receive.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { AwsFake } from "@credhook/fakes/aws";
import {
  AWS_AND_LOCAL_YAML,
  errorOf,
  SERVER_YAML,
  startTestServer,
  type TestServer,
  until,
  startOrdersAwsFake,
} from "./helpers.js";

const OUTAGE_S = Number(process.env.CREDHOOK_OUTAGE_S ?? 60);
const WORKERS = 4;

let aws: AwsFake;
let s: TestServer;

beforeAll(async () => {
  aws = await startOrdersAwsFake();
  s = await startTestServer(`${SERVER_YAML}${AWS_AND_LOCAL_YAML}`, { AWS_ENDPOINT: aws.url });
});
afterAll(async () => {
  await s?.close();
  await aws?.close();
});

interface Answer {
  gateway: "aws" | "local";
  status: number;
  ms: number;
  retryAfter: string | null;
  message: string;
}

const quantile = (xs: number[], q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? Number.NaN;

it(
  `a ${OUTAGE_S} s AWS outage under load: the open breaker answers with no cloud call, < 1.5 cloud calls per portal call, other gateways unaffected, closes by itself, no orphan`,
  async () => {
    // Apps on AWS that exist before the outage (updated during it).
    const existing: Array<{ appName: string; apiKeyId: string }> = [];
    for (let i = 0; i < 4; i++) {
      const res = await s.post("/v1/createCredentials", {
        appName: `Existing ${i}`,
        developer: "cb@example.com",
        apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }],
      });
      expect(res.status).toBe(200);
      existing.push({ appName: `Existing ${i}`, apiKeyId: ((await res.json()) as { apiKeyId: string }).apiKeyId });
    }
    aws.faults.serverError({ service: "apigateway", count: Number.POSITIVE_INFINITY, status: 503 });
    const callsBefore = aws.requests().length;
    const answers: Answer[] = [];
    const received: string[] = [];
    const end = Date.now() + OUTAGE_S * 1000;
    let n = 0;
    const worker = async () => {
      while (Date.now() < end) {
        const i = n++;
        const kind = i % 3; // a create on AWS, an update on AWS, a create on the embedded gateway
        const body =
          kind === 0
            ? {
                appName: `Outage ${i}`,
                developer: "cb@example.com",
                apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }],
              }
            : kind === 1
              ? {
                  ...existing[i % existing.length]!,
                  developer: "cb@example.com",
                  credentialType: "API_KEY",
                  apis: [
                    {
                      id: "5aba4csvd4",
                      action: "NONE",
                      usagePlans: [
                        { id: "1el57v", action: "NONE" },
                        { id: "2plan2", action: i % 2 ? "ADDED" : "REMOVED" },
                      ],
                    },
                  ],
                }
              : { appName: `Local ${i}`, developer: "cb@example.com", apis: [{ id: "weather" }] };
        const t0 = performance.now();
        const res = await s.post(kind === 1 ? "/v1/updateCredentials" : "/v1/createCredentials", body);
        const ms = performance.now() - t0;
        const text = await res.text();
        if (res.status === 200 && kind === 0) received.push((JSON.parse(text) as { apiKeyId: string }).apiKeyId);
        const message = res.status >= 400 ? ((JSON.parse(text) as { messages: string[] }).messages[0] ?? "") : "";
        answers.push({
          gateway: kind === 2 ? "local" : "aws",
          status: res.status,
          ms,
          retryAfter: res.headers.get("retry-after"),
          message,
        });
        await new Promise((r) => setTimeout(r, 500)); // about 8 portal calls a second in all, as a busy portal sends
      }
    };
    await Promise.all(Array.from({ length: WORKERS }, worker));
    const cloudCalls = aws.requests().length - callsBefore;

    // While the breaker is open: health names the gateway; a create is refused with no cloud or store write at all.
    // On a busy machine the last calls can end more than halfOpenAfterS (5 s) after the breaker last
    // opened: then the first health check is its trial call (503, AWS unavailable), which opens it again.
    const healthMessages: string[] = [];
    await until(
      "health to name the open breaker",
      async () => {
        const health = await s.get("/v1/health");
        expect(health.status).toBe(503);
        healthMessages.push((await errorOf(health)).messages.join(" "));
        return /gateway 'aws'.*circuit breaker open/.test(healthMessages.at(-1)!);
      },
      30_000,
    );
    for (const m of healthMessages) expect(m).toMatch(/gateway 'aws'.*(circuit breaker open|AWS is unavailable)/);
    const before = { calls: aws.requests().length, keys: aws.apiGateway.keys.size };
    const refused = await s.post("/v1/createCredentials", {
      appName: "Refused",
      developer: "cb@example.com",
      apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }],
    });
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toMatch(/^\d+$/);
    expect((await errorOf(refused)).messages[0]).toMatch(/gateway 'aws' is unavailable.*circuit breaker open/);
    expect({ calls: aws.requests().length, keys: aws.apiGateway.keys.size }).toEqual(before);
    const recordsOf = async (name: string) => (await s.credhook.store.list()).filter((r) => r.app.appName === name);
    expect(await recordsOf("Refused")).toEqual([]);

    // AWS is back: the breaker half-opens by itself (a trial every 5 s) and closes.
    aws.faults.clear();
    const back = Date.now();
    await until(
      "AWS requests to succeed again",
      async () =>
        (
          await s.post("/v1/createCredentials", {
            appName: `Back ${Date.now()}`,
            developer: "cb@example.com",
            apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }],
          })
        ).status === 200,
      20_000,
    );
    const closedAfterMs = Date.now() - back;
    await until("healthy", async () => (await s.get("/v1/health")).status === 204, 10_000);

    const onAws = answers.filter((a) => a.gateway === "aws");
    const local = answers.filter((a) => a.gateway === "local");
    const open = onAws.filter((a) => a.message.includes("circuit breaker open"));
    const rollbackLines = s.logs.filter((l) => l.includes("update rollback incomplete")).length;
    // The figures first: printed even when an assertion below fails.
    console.log(
      `cloud outage ${OUTAGE_S} s: ${answers.length} portal calls (${onAws.length} on AWS, ${local.length} on the embedded gateway, ${local.filter((a) => a.status === 200).length} of them 200); ${cloudCalls} AWS calls = ${(cloudCalls / onAws.length).toFixed(2)} per AWS portal call; ${open.length} answered by the open breaker in p50 ${quantile(
        open.map((a) => a.ms),
        0.5,
      ).toFixed(1)} ms, p95 ${quantile(
        open.map((a) => a.ms),
        0.95,
      ).toFixed(1)} ms, max ${Math.max(...open.map((a) => a.ms)).toFixed(1)} ms; other AWS answers p50 ${quantile(
        onAws.filter((a) => !open.includes(a)).map((a) => a.ms),
        0.5,
      ).toFixed(
        0,
      )} ms; 500s: ${answers.filter((a) => a.status === 500).length}; 'update rollback incomplete' logged ${rollbackLines}×; closed ${closedAfterMs} ms after AWS came back`,
    );
    expect(
      onAws.filter((a) => a.status >= 500).every((a) => a.status === 503 && /^\d+$/.test(a.retryAfter ?? "")),
    ).toBe(true);
    expect(answers.some((a) => a.status === 500)).toBe(false);
    expect(local.every((a) => a.status === 200)).toBe(true);
    expect(open.length).toBeGreaterThan(onAws.length * 0.8);
    // How fast the open breaker answers is a figure of the machine as much as of credhook: printed above, not asserted
    // (a CPU hog per core made a fixed bound flaky). What it must not do is asserted: call the cloud (the refused create
    // above made no AWS call and wrote nothing; the outage cost fewer than 1.5 cloud calls per portal call).
    expect(cloudCalls / onAws.length).toBeLessThan(1.5);
    // Records = cloud: every AWS key belongs to a live record, and every live record's key is on AWS.
    await until(
      "no orphan key",
      async () => {
        const live = new Set(
          (await s.credhook.store.list()).filter((r) => r.status === "active").map((r) => r.publicId),
        );
        return [...aws.apiGateway.keys.keys()].every((k) => live.has(k));
      },
      20_000,
    );
    for (const id of received) expect(aws.apiGateway.keys.has(id)).toBe(true);
  },
  (OUTAGE_S + 90) * 1000,
);
