/**
 * Routing of portal API ids to gateways: the ordered `routes:` of the config,
 * first match wins. A route matches exact ids and `*` globs (`orders-*`), or is
 * the `default`.
 */
import { Unroutable } from "./errors.js";

/** One entry of `routes:`. */
export type RouteRule = { apis: string[]; gateway: string } | { default: string };

/** A compiled routing table. */
export interface Router {
  /** Gateway for `apiId`, or undefined when no rule matches. */
  resolve(apiId: string): string | undefined;
  /**
   * Gateway of every id, in input order.
   * @throws Unroutable (422) naming every id that no rule matches
   */
  resolveAll(apiIds: string[]): Map<string, string>;
  /** The rules as given, for `check-config`. */
  readonly rules: readonly RouteRule[];
}

function globToRegExp(glob: string): RegExp {
  const escaped = glob.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`^${escaped.join(".*")}$`);
}

/** Compiles `rules` (validated by the config schema) into a {@link Router}. */
export function createRouter(rules: readonly RouteRule[]): Router {
  const matchers = rules.map((rule) => {
    if ("default" in rule) return { gateway: rule.default, test: () => true };
    const exact = new Set(rule.apis.filter((p) => !p.includes("*")));
    const globs = rule.apis.filter((p) => p.includes("*")).map(globToRegExp);
    return { gateway: rule.gateway, test: (id: string) => exact.has(id) || globs.some((g) => g.test(id)) };
  });
  const resolve = (apiId: string) => matchers.find((m) => m.test(apiId))?.gateway;
  return {
    rules,
    resolve,
    resolveAll(apiIds) {
      const out = new Map<string, string>();
      const missing: string[] = [];
      for (const id of apiIds) {
        const gw = resolve(id);
        if (gw === undefined) missing.push(id);
        else out.set(id, gw);
      }
      if (missing.length > 0) {
        throw new Unroutable(
          `no route matches API id${missing.length > 1 ? "s" : ""} ${missing.map((m) => `'${m}'`).join(", ")}`,
          {
            messages: ["add a route for it under routes: in webhook.config.yaml, or a { default: <gateway> } route"],
          },
        );
      }
      return out;
    },
  };
}
