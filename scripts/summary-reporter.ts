// A vitest reporter that ends the run with one plain line, `Tests: N passed, N failed, N skipped`,
// which CI systems that do not parse vitest's own summary can read, preceded by one
// `FAILED: <file> > <test>: <first line of the error>` line per failed test and one
// `UNHANDLED: <message>` line per error vitest caught outside a test (such an error fails
// the run although every test passed). `.ci/run` prints these lines again at its very end.
import type { Reporter, TestModule, TestRunEndReason } from "vitest/node";

/** The first line of an error's message, at most 300 characters. */
function firstLine(error: { message?: string; name?: string } | undefined): string {
  const text = `${error?.name ?? "Error"}: ${error?.message ?? "(no message)"}`;
  return (text.split("\n")[0] ?? "").slice(0, 300);
}

export default class SummaryReporter implements Reporter {
  onTestRunEnd(
    testModules: ReadonlyArray<TestModule>,
    unhandledErrors: ReadonlyArray<{ message?: string; name?: string }> = [],
    reason?: TestRunEndReason,
  ): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    const lines: string[] = [];
    for (const mod of testModules) {
      const file = mod.moduleId.replace(`${process.cwd()}/`, "");
      for (const test of mod.children.allTests()) {
        const result = test.result();
        if (result.state === "passed") passed++;
        else if (result.state === "failed") {
          failed++;
          lines.push(`FAILED: ${file} > ${test.fullName}: ${firstLine(result.errors?.[0])}`);
        } else skipped++;
      }
      // A file that failed outside its tests (an import, a beforeAll): its tests were skipped, not failed.
      if (mod.state() === "failed" && ![...mod.children.allTests()].some((t) => t.result().state === "failed")) {
        failed++;
        lines.push(`FAILED: ${file} (the file itself): ${firstLine(mod.errors()[0])}`);
      }
    }
    for (const error of unhandledErrors) lines.push(`UNHANDLED: ${firstLine(error)}`);
    const tail = reason && reason !== "passed" ? ` (run ${reason})` : "";
    process.stdout.write(
      `\n${lines.map((l) => `${l}\n`).join("")}Tests: ${passed} passed, ${failed} failed, ${skipped} skipped${tail}\n`,
    );
  }
}
