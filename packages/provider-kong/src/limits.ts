/**
 * Usage plans as Kong's rate-limiting plugin holds them, and the rule Kong holds that plugin's
 * config to. Plans are defined in the `plans` option and merged into the one plugin a consumer
 * has by core's provider kit (`planLimitsOf`, `refusedPairs`: each window the largest limit of
 * the app's plans); what is Kong's is here: its windows, its rule and the words for both.
 *
 * Kong's rule (the plugin schema's `custom_validator`, `validate_periods_order` in
 * `kong/plugins/rate-limiting/schema.lua`,
 * https://github.com/Kong/kong/blob/master/kong/plugins/rate-limiting/schema.lua): for every
 * two windows that are both set, the longer window's limit is not lower than the shorter
 * one's — second ≤ minute ≤ hour ≤ day ≤ month ≤ year wherever both are set. Kong refuses
 * any other config with `400 schema violation` (`The limit for hour(50.0) cannot be lower
 * than the limit for minute(100.0)`), on the plugin's create and on its update alike.
 */
import type { LimitSources, PlanRule, WindowLimits } from "@credhook/core/provider-kit";

/** The rate-limiting plugin's windows, shortest first (Kong's `ORDERED_PERIODS`). */
export const WINDOWS = ["second", "minute", "hour", "day", "month", "year"] as const;

/** One of the rate-limiting plugin's windows. */
export type Window = (typeof WINDOWS)[number];

/** A plan's limits: requests per window (the rate-limiting plugin's config fields of the same names). */
export type PlanLimits = WindowLimits<Window>;

/** The rule as the messages state it. */
export const PERIOD_ORDER_RULE =
  "Kong's rate-limiting plugin requires second <= minute <= hour <= day <= month <= year wherever both are set";

/**
 * What Kong's rate-limiting plugin refuses in `limits` (see the module's comment for Kong's
 * source): every two windows, both set, whose longer one's limit is lower, shortest first, in
 * words — `minute 100 above hour 50`, joined by `, `; `source` names where each limit comes from
 * (`minute 100 (plan 'gold') above …`). Undefined when Kong accepts them.
 */
export function kongRefuses(limits: PlanLimits, source?: LimitSources<Window>): string | undefined {
  const side = (w: Window) => `${w} ${limits[w]}${source?.[w] !== undefined ? ` (plan '${source[w]}')` : ""}`;
  const inversions = WINDOWS.flatMap((shorter, i) =>
    WINDOWS.slice(i + 1)
      .filter((longer) => (limits[longer] ?? Number.POSITIVE_INFINITY) < (limits[shorter] ?? 0))
      .map((longer) => `${side(shorter)} above ${side(longer)}`),
  );
  return inversions.length > 0 ? inversions.join(", ") : undefined;
}

/**
 * The problems of the `plans` option Kong would refuse, one per plan, each naming the plan's
 * YAML path (`<at>.<plan>`) and its windows out of order.
 * @param at the YAML path of the `plans` option, e.g. `gateways.kong.options.plans`
 */
export function planProblems(plans: Readonly<Record<string, PlanLimits>>, at: string): string[] {
  return Object.entries(plans).flatMap(([plan, limits]) => {
    const refused = kongRefuses(limits);
    return refused === undefined
      ? []
      : [
          `${at}.${plan}: ${refused}: Kong refuses this plan (${PERIOD_ORDER_RULE}); raise the longer window's limit or lower the shorter one's`,
        ];
  });
}

/** Kong's rule on a consumer's merged plans, for the kit's `planLimitsOf` and `refusedPairs`. */
export const KONG_PLAN_RULE: PlanRule<Window> = { windows: WINDOWS, refusal: kongRefuses, rule: PERIOD_ORDER_RULE };
