// Module resolve hook: adds the "dev-source" export condition, so workspace
// packages resolve to their TypeScript sources when credhook runs unbuilt.
export async function resolve(specifier, context, nextResolve) {
  const conditions = context.conditions.includes("dev-source") ? context.conditions : [...context.conditions, "dev-source"];
  return nextResolve(specifier, { ...context, conditions });
}
