/** Schema version 3's migration of the app keys written before it. */
import { appKeyOf } from "@credhook/core/store";

/**
 * The identity an app key written before schema version 3 stood for, in {@link appKeyOf}'s encoding:
 * `slug:<s>` → the record's developer + slug `<s>`; `app:<developer>/<name>` → that pair, split
 * after the record's own developer (or at the only `/` when the app moved to another developer).
 * A key that cannot be split unambiguously becomes `legacy:<old key>`, which no request matches.
 */
export function migrateLegacyAppKey(appKey: string, app: { developer: string }): string {
  if (appKey.startsWith("slug:")) return appKeyOf({ developer: app.developer, appName: "", appSlug: appKey.slice(5) });
  if (appKey.startsWith("app:")) {
    const rest = appKey.slice(4);
    if (rest.startsWith(`${app.developer}/`))
      return appKeyOf({ developer: app.developer, appName: rest.slice(app.developer.length + 1) });
    const parts = rest.split("/");
    if (parts.length === 2) return appKeyOf({ developer: parts[0]!, appName: parts[1]! });
  }
  return `legacy:${appKey}`;
}
