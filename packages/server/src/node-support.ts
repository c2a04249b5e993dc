/**
 * Node.js versions credhook supports: 22 and 24 (the LTS lines), and 20.19+
 * while that costs nothing (Node 20 reached end of life in April 2026).
 */

/**
 * On Node < 22, turns off the AWS SDK's start-up notice that its releases from
 * January 2027 will need Node ≥ 22 (`NodeVersionSupportWarning`), with the switch
 * the SDK documents for it, `AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED=true`
 * (https://github.com/aws/aws-sdk-js-v3/issues/7983). The notice is not actionable
 * for an operator: credhook pins exact AWS SDK versions, so an installed credhook
 * never picks up those releases; its own Node support is stated in the README.
 * An operator's own setting of the variable is left as it is.
 * @returns true when the variable was set by this call
 */
export function quietAwsSdkNodeNotice(env: Record<string, string | undefined> = process.env, version: string = process.version): boolean {
  const major = Number(/^v?(\d+)/.exec(version)?.[1] ?? 0);
  if (major >= 22 || env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED !== undefined) return false;
  env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = "true";
  return true;
}
