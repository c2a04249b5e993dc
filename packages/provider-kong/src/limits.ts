/**
 * Usage plans as Kong's rate-limiting plugin holds them: a plan's limits, how an app's
 * plans merge into the one plugin a consumer has, and the rule Kong holds that plugin's
 * config to.
 *
 * Kong's rule (the plugin schema's `custom_validator`, `validate_periods_order` in
 * `kong/plugins/rate-limiting/schema.lua`,
 * https://github.com/Kong/kong/blob/master/kong/plugins/rate-limiting/schema.lua): for every
 * two windows that are both set, the longer window's limit is not lower than the shorter
 * one's — second ≤ minute ≤ hour ≤ day ≤ month ≤ year wherever both are set. Kong refuses
 * any other config with `400 schema violation` (`The limit for hour(50.0) cannot be lower
 * than the limit for minute(100.0)`), on the plugin's create and on its update alike.
 */

/** The rate-limiting plugin's windows, shortest first (Kong's `ORDERED_PERIODS`). */
export const WINDOWS = ["second", "minute", "hour", "day", "month", "year"] as const;

/** One of the rate-limiting plugin's windows. */
export type Window = (typeof WINDOWS)[number];

/** A plan's limits: requests per window (the rate-limiting plugin's config fields of the same names); an absent window is not limited. */
export type PlanLimits = Partial<Record<Window, number>>;

/** Two windows whose limits break Kong's order: `longer`'s limit is lower than `shorter`'s. */
export interface PeriodInversion {
  /** The shorter window (e.g. `minute`). */
  shorter: Window;
  /** The longer window whose limit is lower (e.g. `hour`). */
  longer: Window;
}

/** The rule as the messages state it. */
export const PERIOD_ORDER_RULE =
  "Kong's rate-limiting plugin requires second <= minute <= hour <= day <= month <= year wherever both are set";

/**
 * Every pair of windows of `limits` that Kong's rate-limiting plugin refuses (see the module's
 * comment for Kong's source), shortest window first; empty when Kong accepts them.
 */
export function periodInversions(limits: PlanLimits): PeriodInversion[] {
  const out: PeriodInversion[] = [];
  WINDOWS.forEach((shorter, i) => {
    const low = limits[shorter];
    if (low === undefined) return;
    for (const longer of WINDOWS.slice(i + 1)) {
      const high = limits[longer];
      if (high !== undefined && high < low) out.push({ shorter, longer });
    }
  });
  return out;
}

/**
 * The inversions in words: `minute 100 above hour 50`, joined by `, `; `source` names where each
 * window's limit comes from (`minute 100 (plan 'gold') above …`).
 */
export function describeInversions(
  limits: PlanLimits,
  inversions: PeriodInversion[],
  source?: Partial<Record<Window, string>>,
): string {
  const side = (w: Window) => `${w} ${limits[w]}${source?.[w] !== undefined ? ` (plan '${source[w]}')` : ""}`;
  return inversions.map((x) => `${side(x.shorter)} above ${side(x.longer)}`).join(", ");
}

/**
 * The limits of several plans on one consumer: each window takes the largest limit of the plans
 * that set it (the one plugin of a consumer carries them all), and `source` the plan it came from
 * (the first of `plans` in its order when several have the same).
 * @param plans plan ids, each a key of `defs`
 * @param defs the `plans` option
 */
export function mergePlans(
  plans: readonly string[],
  defs: Readonly<Record<string, PlanLimits>>,
): { limits: PlanLimits; source: Partial<Record<Window, string>> } {
  const limits: PlanLimits = {};
  const source: Partial<Record<Window, string>> = {};
  for (const p of plans)
    for (const w of WINDOWS) {
      const v = defs[p]?.[w];
      if (v !== undefined && v > (limits[w] ?? 0)) {
        limits[w] = v;
        source[w] = p;
      }
    }
  return { limits, source };
}

/**
 * The problems of the `plans` option Kong would refuse, one per plan, each naming the plan's
 * YAML path (`<at>.<plan>`) and its windows out of order.
 * @param at the YAML path of the `plans` option, e.g. `gateways.kong.options.plans`
 */
export function planProblems(plans: Readonly<Record<string, PlanLimits>>, at: string): string[] {
  return Object.entries(plans).flatMap(([plan, limits]) => {
    const inversions = periodInversions(limits);
    if (inversions.length === 0) return [];
    return [
      `${at}.${plan}: ${describeInversions(limits, inversions)}: Kong refuses this plan (${PERIOD_ORDER_RULE}); raise the longer window's limit or lower the shorter one's`,
    ];
  });
}

/**
 * The pairs of plans that one app cannot have together on this gateway: each is accepted alone,
 * but their merge ({@link mergePlans}) is not. Pairs are enough: a set of plans whose merge Kong
 * refuses holds a pair whose merge it refuses (the plan that gives the shorter window its limit
 * and the one that gives the longer window its limit).
 * @returns `[a, b, what Kong would refuse]`, `a` before `b` in the option's order
 */
export function conflictingPlanPairs(plans: Readonly<Record<string, PlanLimits>>): Array<[string, string, string]> {
  const ids = Object.keys(plans);
  const out: Array<[string, string, string]> = [];
  ids.forEach((a, i) => {
    for (const b of ids.slice(i + 1)) {
      const { limits, source } = mergePlans([a, b], plans);
      const inversions = periodInversions(limits);
      if (inversions.length > 0) out.push([a, b, describeInversions(limits, inversions, source)]);
    }
  });
  return out;
}
