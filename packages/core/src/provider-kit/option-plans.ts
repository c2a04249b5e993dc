/**
 * Usage plans a gateway has no notion of, defined in credhook's options instead: each plan a
 * set of request limits per window (`plans: { gold: { minute: 600, hour: 20000 } }`), set on the
 * one rate-limiting config a consumer has (Kong's `rate-limiting` plugin). What is the same for
 * every such gateway is here: the plans of an app's APIs, an unknown plan refused before any
 * write, several plans merged into one config (each window takes the largest limit of them: an
 * app never gets less than any of its plans grants), and the pairs of plans whose merge the
 * gateway refuses. What the gateway refuses — its rule, in its words — is the provider's.
 */
import { InvalidReference, PolicyViolation } from "../errors.js";
import type { GatewayApi } from "../provider.js";
import type { GatewayErrors } from "./gateway-errors.js";

/** One plan's limits: requests per window (`W`: the gateway's window names); an absent window is not limited. */
export type WindowLimits<W extends string> = Partial<Record<W, number>>;

/** Of merged limits ({@link mergeLimits}), the plan each window's limit comes from. */
export type LimitSources<W extends string> = Partial<Record<W, string>>;

/**
 * What the gateway refuses in one set of limits, in words naming the windows (and, with `source`,
 * the plan each limit comes from), e.g. `minute 100 (plan 'gold') above hour 50 (plan 'slow')`;
 * undefined when it accepts them.
 */
export type LimitsRefusal<W extends string> = (limits: WindowLimits<W>, source?: LimitSources<W>) => string | undefined;

/** What a gateway holds a merged set of limits to: its windows, what it refuses, and its rule in words. */
export interface PlanRule<W extends string> {
  /** The gateway's windows, shortest first (Kong's `second` … `year`). */
  windows: readonly W[];
  /** What it refuses in a set of limits. */
  refusal: LimitsRefusal<W>;
  /** The rule, for messages: `Kong's rate-limiting plugin requires …`. */
  rule: string;
}

/**
 * The JSON Schema of a `plans` option (plan id → requests per window, each window optional, at
 * least one set), for a provider's options schema; the gateway's words in `description`.
 * @param windows the gateway's windows (the limits' property names)
 */
export function windowPlansOption<const W extends string>(windows: readonly W[], description: string) {
  const limit = { type: "integer", minimum: 1, description: "Requests allowed per window." } as const;
  const properties = Object.fromEntries(windows.map((w) => [w, limit])) as { [K in W]: typeof limit };
  return {
    type: "object",
    default: {},
    description,
    additionalProperties: { type: "object", additionalProperties: false, minProperties: 1, properties },
  } as const;
}

/**
 * The usage plans of `apis`, each once, sorted, checked to be defined in the `plans` option.
 * @param defined the `plans` option (plan id → its limits)
 * @param errors the gateway's errors (messages name it)
 * @throws InvalidReference (422, before any write) a plan the option does not define, naming the ones it does
 */
export function definedPlansOf(
  apis: GatewayApi[],
  defined: Readonly<Record<string, unknown>>,
  errors: GatewayErrors,
): string[] {
  const plans = [...new Set(apis.flatMap((a) => a.usagePlans))].sort();
  const unknown = plans.filter((p) => !Object.hasOwn(defined, p));
  if (unknown.length > 0)
    throw errors.error(
      InvalidReference,
      `usage plan ${unknown.map((p) => `'${p}'`).join(", ")} is not defined in this gateway's 'plans' option; known: ${Object.keys(defined).join(", ") || "none"}`,
    );
  return plans;
}

/**
 * The limits of several plans on one consumer: each window takes the largest limit of the plans
 * that set it, and `source` the plan it came from (the first of `plans` in its order when several
 * have the same).
 * @param plans plan ids, each a key of `defs`
 * @param defs the `plans` option
 * @param windows the gateway's windows
 */
export function mergeLimits<W extends string>(
  plans: readonly string[],
  defs: Readonly<Record<string, WindowLimits<W>>>,
  windows: readonly W[],
): { limits: WindowLimits<W>; source: LimitSources<W> } {
  const limits: WindowLimits<W> = {};
  const source: LimitSources<W> = {};
  for (const p of plans)
    for (const w of windows) {
      const v = defs[p]?.[w];
      if (v !== undefined && v > (limits[w] ?? 0)) {
        limits[w] = v;
        source[w] = p;
      }
    }
  return { limits, source };
}

/**
 * The plans of an app's APIs and the limits they merge into ({@link mergeLimits}), checked before any write.
 * @param defs the `plans` option
 * @returns the plans (sorted) and their merged limits; no `limits` when the app has no plan
 * @throws InvalidReference (422) a plan the option does not define
 * @throws PolicyViolation (422) the plans are each accepted but their merge is refused by the gateway, naming the plans, the windows and the plan each limit comes from
 */
export function planLimitsOf<W extends string>(
  apis: GatewayApi[],
  defs: Readonly<Record<string, WindowLimits<W>>>,
  rule: PlanRule<W>,
  errors: GatewayErrors,
): { plans: string[]; limits?: WindowLimits<W> } {
  const plans = definedPlansOf(apis, defs, errors);
  if (plans.length === 0) return { plans };
  const { limits, source } = mergeLimits(plans, defs, rule.windows);
  const refused = rule.refusal(limits, source);
  if (refused !== undefined)
    throw errors.error(
      PolicyViolation,
      `usage plans ${plans.map((p) => `'${p}'`).join(", ")} cannot be combined on this gateway: merged (each window the largest limit of the plans) they give ${refused}, and ${rule.rule}; give the app plans that fit together, or change the gateway's 'plans' option`,
    );
  return { plans, limits };
}

/**
 * The pairs of plans that one app cannot have together on the gateway: each may be accepted alone,
 * but their merge ({@link mergeLimits}) is refused. Pairs are enough for a rule on two windows at a
 * time (Kong's order of windows): a set whose merge is refused holds a pair whose merge is (the plan
 * that gives one window its limit and the one that gives the other its limit).
 * @returns `[a, b, what the gateway refuses]`, `a` before `b` in the option's order
 */
export function refusedPairs<W extends string>(
  defs: Readonly<Record<string, WindowLimits<W>>>,
  rule: PlanRule<W>,
): Array<[string, string, string]> {
  const ids = Object.keys(defs);
  return ids.flatMap((a, i) =>
    ids.slice(i + 1).flatMap((b): Array<[string, string, string]> => {
      const { limits, source } = mergeLimits([a, b], defs, rule.windows);
      const why = rule.refusal(limits, source);
      return why === undefined ? [] : [[a, b, why]];
    }),
  );
}
