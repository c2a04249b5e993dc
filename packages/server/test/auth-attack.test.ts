/**
 * Authentication under attack, with the quick start's kind of credential (a
 * scrypt hash): failed-attempt budgets reserved before the check, a bound on
 * concurrent hash checks, a global budget across client addresses, and a
 * verified credential that no one else's failures lock out. Other clients are
 * real other source addresses (127.0.0.x).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "node:http";
import { hashPassword, type ServerLimits } from "../src/index.js";
import { errorResponseProblem, startTestServer, type TestServer } from "./helpers.js";

const PASSWORD = "a-portal-password-only-its-hash-is-kept";
const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString("base64")}`;
const GOOD = basic("portal", PASSWORD);
let HASH = "";

beforeAll(async () => {
  // Half the production cost (N=2^14, about 35 ms a check here): the cases count checks and their overlap, and
  // about 50 checks at N=2^15 were this file's 4 s of CPU.
  HASH = await hashPassword(PASSWORD, { N: 2 ** 14 });
});

const start = (maxFailures: number, limits: ServerLimits) =>
  startTestServer(
    `
server:
  auth:
    maxFailures: ${maxFailures}
    failureWindowS: 60
    users:
      - { username: portal, passwordHash: "${HASH}" }
store: { sqlite: "\${CREDHOOK_DATA_DIR}/credhook.db" }
dataDir: "\${CREDHOOK_DATA_DIR}"
gateways: { local: { provider: local, credentialType: API_KEY } }
routes: [ { default: local } ]
`,
    {},
    limits,
  );

interface Answer {
  status: number;
  retryAfter: string | undefined;
  contentType: string | undefined;
  text: string;
  body: { messages?: string[] };
}

/** GET /v1/health from source address `from` (a new connection each time). */
function health(s: TestServer, authorization: string, from = "127.0.0.1"): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port: s.port,
        path: "/v1/health",
        localAddress: from,
        agent: false,
        headers: { authorization },
      },
      (res) => {
        let text = "";
        res.on("data", (d) => (text += String(d)));
        res.on("end", () =>
          resolve({
            status: res.statusCode!,
            retryAfter: res.headers["retry-after"] as string | undefined,
            contentType: res.headers["content-type"],
            text,
            body: text ? (JSON.parse(text) as Answer["body"]) : {},
          }),
        );
      },
    );
    req.on("error", reject);
    req.end();
  });
}

const count = (answers: Answer[], status: number) => answers.filter((a) => a.status === status).length;

/** Every refusal is an ErrorResponse with its status; 429 and 503 say when to retry. */
function expectErrorResponses(answers: Answer[]) {
  for (const a of answers.filter((x) => x.status >= 400)) {
    expect(errorResponseProblem(a.status, a.contentType, a.text)).toBeUndefined();
    if (a.status === 429 || a.status === 503) expect(Number(a.retryAfter)).toBeGreaterThan(0);
  }
}

describe("brute force from one address", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await start(10, { maxConcurrentPasswordChecks: 2, maxGlobalFailures: 1000 });
  });
  afterAll(() => s.close());

  it("100 concurrent wrong passwords: at most 10 are checked (401), the rest are refused unchecked (429, or 503 while 2 checks run)", async () => {
    const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => health(s, basic("portal", `guess-${i}`))));
    expect(answers.every((a) => [401, 429, 503].includes(a.status))).toBe(true);
    expect(count(answers, 401)).toBeGreaterThanOrEqual(1);
    expect(count(answers, 401)).toBeLessThanOrEqual(10);
    expect(count(answers, 429) + count(answers, 503)).toBeGreaterThanOrEqual(90);
    expectErrorResponses(answers);
    // Until the budget is spent, further guesses are checked one by one; then everything unverified is 429.
    for (let i = 0; i < 10; i++) await health(s, basic("portal", `later-${i}`));
    const right = await health(s, GOOD);
    expect(right.status).toBe(429);
    expect(right.body.messages![0]).toMatch(/too many failed logins from this client; try again in \d+ s/);
  });
});

describe("a verified credential is never locked out by other clients' failures", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await start(5, { maxConcurrentPasswordChecks: 2, maxGlobalFailures: 10 });
  });
  afterAll(() => s.close());

  it("the portal, once verified, passes during a brute force from its own address and from 50 others", async () => {
    expect((await health(s, GOOD)).status).toBe(204);
    // 450 guesses from 50 addresses, 9 each, all at once per round.
    const attack: Answer[] = [];
    for (let round = 0; round < 9; round++) {
      attack.push(
        ...(await Promise.all(
          Array.from({ length: 50 }, (_, a) => health(s, basic("portal", `r${round}-a${a}`), `127.0.0.${10 + a}`)),
        )),
      );
      expect((await health(s, GOOD)).status).toBe(204); // the remembered portal, during the attack
    }
    expect(attack.every((a) => [401, 429, 503].includes(a.status))).toBe(true);
    expect(count(attack, 401)).toBeLessThanOrEqual(10); // the global budget, across addresses
    expectErrorResponses(attack);
    expect(attack.some((a) => /from all clients together/.test(a.body.messages?.[0] ?? ""))).toBe(true);
    // Its own address is over its budget too, and the portal still passes from it.
    for (let i = 0; i < 6; i++) await health(s, basic("portal", `same-address-${i}`));
    expect((await health(s, GOOD)).status).toBe(204);
    expect((await health(s, GOOD, "127.0.0.99")).status).toBe(204);
  });
});

describe("concurrent first logins", () => {
  it("30 concurrent requests with the right password before it was ever verified share one check: all pass", async () => {
    const s = await start(3, { maxConcurrentPasswordChecks: 1 });
    try {
      const answers = await Promise.all(Array.from({ length: 30 }, () => health(s, GOOD)));
      expect(answers.map((a) => a.status)).toEqual(Array(30).fill(204));
    } finally {
      await s.close();
    }
  });

  it("more distinct credentials than the hash-check bound at once: the extra ones are 503 with Retry-After: 1, at once", async () => {
    const s = await start(1000, { maxConcurrentPasswordChecks: 2, maxGlobalFailures: 1000 });
    try {
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) => health(s, basic("portal", `distinct-${i}`), `127.0.1.${i + 1}`)),
      );
      expect(answers.every((a) => a.status === 401 || a.status === 503)).toBe(true);
      expect(count(answers, 503)).toBeGreaterThan(0);
      expect(count(answers, 401)).toBeGreaterThanOrEqual(2);
      for (const a of answers.filter((x) => x.status === 503)) {
        expect(a.retryAfter).toBe("1");
        expect(a.body.messages![0]).toBe("2 password checks are already running; retry in 1 s");
      }
      // Nothing was spent by the refused ones: those clients are checked when they retry.
      expect((await health(s, GOOD, "127.0.1.1")).status).toBe(204);
    } finally {
      await s.close();
    }
  });
});
