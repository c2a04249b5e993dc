/**
 * Usage-plan limits, enforced per credential with rate-limiter-flexible — in
 * memory (each instance counts the requests it sees), or on the shared
 * PostgreSQL store (every instance counts against the same counters, with an
 * in-memory limiter as insurance while the database cannot be reached):
 * - rate: fixed windows of 1 s (`perSecond`) and 60 s (`perMinute`) that start
 *   at the credential's first request in the window;
 * - quota: calendar periods in UTC (`perDay` from 00:00, `perMonth` from the 1st).
 * A request counts against every limited plan of the API it is for; it passes
 * only when all admit it, and then consumes one point of each (a request
 * refused by one limit gives back what the others took; refused requests do
 * not count).
 */
import { createHash } from "node:crypto";
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes } from "rate-limiter-flexible";
import type { LocalCredentialReader, UsagePlanLimits } from "@credhook/provider-local";

/** A refusal: which limit, and when to try again. */
export interface LimitRefusal {
  /** Seconds until the refusing window ends (at least 1): the `Retry-After` value. */
  retryAfterS: number;
  /** What was exceeded, e.g. `usage plan 'gold': 5 requests per second`. */
  message: string;
}

type Kind = "perSecond" | "perMinute" | "perDay" | "perMonth";
const WINDOW_S: Record<"perSecond" | "perMinute", number> = { perSecond: 1, perMinute: 60 };
const UNIT: Record<Kind, string> = {
  perSecond: "second",
  perMinute: "minute",
  perDay: "day (UTC)",
  perMonth: "month (UTC)",
};

/** The UTC period a quota counts in now, and the seconds left in it. */
function period(kind: "perDay" | "perMonth", now: Date): { label: string; secondsLeft: number } {
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  const end = kind === "perDay" ? Date.UTC(y, m, now.getUTCDate() + 1) : Date.UTC(y, m + 1, 1);
  const label = kind === "perDay" ? now.toISOString().slice(0, 10) : now.toISOString().slice(0, 7);
  return { label, secondsLeft: (end - now.getTime()) / 1000 };
}

/** What a limit needs of its rate-limiter-flexible limiter. */
type Limiter = Pick<RateLimiterMemory, "consume" | "get" | "reward">;

interface Limit {
  kind: Kind;
  points: number;
  limiter: Limiter;
  plan: string;
}

/**
 * Counters on PostgreSQL (rate-limiter-flexible's RateLimiterPostgres): one
 * table, `<schemaName>.<tableName>`, created when missing. Counters are keyed by
 * gateway, plan, window and credential; expiry times come from each instance's
 * clock (keep them in NTP sync).
 */
export interface SharedLimitsBackend {
  /** A node-postgres `Pool`. */
  storeClient: unknown;
  /** Schema of the table (credhook's store schema). */
  schemaName: string;
  /** @default "embedded_gateway_limits" */
  tableName?: string;
}

const SEP = "\u001f"; // a separator no id contains, and PostgreSQL text accepts (unlike NUL)

/** Enforces the limits of the embedded gateways' usage plans. */
export class PlanLimiter {
  private readonly limits = new Map<string, Limit[]>();
  private readonly tableName: string;

  /** @param shared counters on PostgreSQL; absent: in memory, per instance */
  constructor(private readonly shared?: SharedLimitsBackend) {
    this.tableName = shared?.tableName ?? "embedded_gateway_limits";
  }

  /** Where the counters are, for log lines. */
  get description(): string {
    return this.shared ? `PostgreSQL table ${this.shared.schemaName}.${this.tableName}` : "memory (per instance)";
  }

  /**
   * Creates the shared counters' table when missing (no-op in memory), and
   * starts the removal of expired counters (every 5 minutes).
   * @throws Error when the database cannot be reached
   */
  async init(): Promise<void> {
    const shared = this.shared;
    if (!shared) return;
    await new Promise<void>((resolve, reject) => {
      new RateLimiterPostgres(
        {
          storeClient: shared.storeClient,
          storeType: "pool",
          schemaName: shared.schemaName,
          tableName: this.tableName,
          points: 1,
          duration: 1,
          keyPrefix: "init",
        },
        (err?: unknown) => (err ? reject(err instanceof Error ? err : new Error(String(err))) : resolve()),
      );
    });
  }

  private limiter(points: number, duration: number, keyPrefix: string): Limiter {
    const memory = new RateLimiterMemory({ points, duration, keyPrefix });
    if (!this.shared) return memory;
    return new RateLimiterPostgres({
      storeClient: this.shared.storeClient,
      storeType: "pool",
      schemaName: this.shared.schemaName,
      tableName: this.tableName,
      tableCreated: true,
      clearExpiredByTimeout: false,
      points,
      duration,
      keyPrefix,
      // The database out of reach: count in memory meanwhile rather than refuse everything.
      insuranceLimiter: memory,
    });
  }

  /** Limits of `plan` on `provider`'s gateway, created on first use. */
  private limitsOf(provider: LocalCredentialReader, plan: string): Limit[] {
    const key = `${provider.gatewayName}${SEP}${plan}`;
    let list = this.limits.get(key);
    if (list) return list;
    const def: UsagePlanLimits | undefined = provider.planLimits(plan);
    list = [];
    // Counter keys stay well under the shared table's 255 characters: a long plan id is replaced by its digest.
    const planKey = plan.length > 64 ? createHash("sha256").update(plan).digest("hex").slice(0, 32) : plan;
    const add = (kind: Kind, points: number | undefined, duration: number) => {
      if (points === undefined) return;
      list!.push({
        kind,
        points,
        plan,
        limiter: this.limiter(points, duration, `${provider.gatewayName}${SEP}${planKey}${SEP}${kind}`),
      });
    };
    add("perSecond", def?.rate?.perSecond, WINDOW_S.perSecond);
    add("perMinute", def?.rate?.perMinute, WINDOW_S.perMinute);
    add("perDay", def?.quota?.perDay, 86400);
    add("perMonth", def?.quota?.perMonth, 31 * 86400);
    this.limits.set(key, list);
    return list;
  }

  /** True when some plan in `plans` has limits on `provider`'s gateway. */
  hasLimits(provider: LocalCredentialReader, plans: readonly string[]): boolean {
    for (const p of plans) if (this.limitsOf(provider, p).length > 0) return true;
    return false;
  }

  /**
   * Counts one request of credential `credentialId` against every limited plan
   * in `plans`.
   * @returns undefined when every limit admits it, else the refusal
   */
  async admit(
    provider: LocalCredentialReader,
    credentialId: string,
    plans: readonly string[],
  ): Promise<LimitRefusal | undefined> {
    const taken: Array<{ limit: Limit; key: string; options: { customDuration?: number } }> = [];
    const now = new Date();
    for (const plan of plans) {
      for (const limit of this.limitsOf(provider, plan)) {
        let key = credentialId;
        const options: { customDuration?: number } = {};
        if (limit.kind === "perDay" || limit.kind === "perMonth") {
          const p = period(limit.kind, now);
          key = `${credentialId}${SEP}${p.label}`;
          options.customDuration = p.secondsLeft;
        }
        try {
          await limit.limiter.consume(key, 1, options);
          taken.push({ limit, key, options });
        } catch (res) {
          if (!(res instanceof RateLimiterRes)) throw res;
          await this.giveBack(taken);
          return {
            retryAfterS: Math.max(1, Math.ceil(res.msBeforeNext / 1000)),
            message: `usage plan '${plan}' allows ${limit.points} request${limit.points === 1 ? "" : "s"} per ${UNIT[limit.kind]}`,
          };
        }
      }
    }
    return undefined;
  }

  /** Gives back the points a refused request took from the limits that admitted it (unless their window ended meanwhile). */
  private async giveBack(
    taken: Array<{ limit: Limit; key: string; options: { customDuration?: number } }>,
  ): Promise<void> {
    for (const t of taken) {
      const res = await t.limit.limiter.get(t.key);
      if (res && res.msBeforeNext > 0) await t.limit.limiter.reward(t.key, 1, t.options);
    }
  }
}
