// The deployment examples stay true to the code: the Kubernetes example's config
// loads (its secret read from a file), its probes are the server's, and the
// Dockerfile ships the packed install the packed-install test exercises.
// The example's store is PostgreSQL: the tests' real server stands in for it.
import { describe, expect, inject, it } from "vitest";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { createLogger, loadConfigFile, startServer } from "../src/index.js";

const repo = (p: string) => new URL(`../../../${p}`, import.meta.url);

describe("deploy/kubernetes/credhook.yaml", () => {
  const docs = parseAllDocuments(readFileSync(repo("deploy/kubernetes/credhook.yaml"), "utf8")).map((d) => d.toJS() as Record<string, any>);
  const kind = (k: string) => docs.find((d) => d.kind === k)!;

  it("its ConfigMap's config reads the portal password and the database URL from the mounted Secret; two replicas on it serve the Deployment's probes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "credhook-k8s-"));
    const secret = kind("Secret").stringData as Record<string, string>;
    expect(Object.keys(secret).sort()).toEqual(["database-url", "portal-password"]);
    // the test's PostgreSQL in a schema of its own stands in for the Secret's database URL
    const schema = `k8s_${randomBytes(4).toString("hex")}`;
    writeFileSync(join(dir, "portal-password"), "k8s-secret-password\n");
    writeFileSync(join(dir, "database-url"), `${inject("databaseUrl")}\n`);
    const yaml = (kind("ConfigMap").data["webhook.config.yaml"] as string)
      .replaceAll("/run/secrets/credhook/", `${dir}/`)
      .replace(/^(\s+)postgres: ("[^"]*")/m, `$1postgres: { url: $2, schema: ${schema} }`)
      .replaceAll("/var/lib/credhook", dir);
    writeFileSync(join(dir, "webhook.config.yaml"), yaml);
    const config = await loadConfigFile(join(dir, "webhook.config.yaml"), { env: {} });
    expect(config.server.auth.users[0]!.password).toBe("k8s-secret-password");
    expect(config.store).toEqual({ postgres: { url: inject("databaseUrl"), schema } });
    const container = kind("Deployment").spec.template.spec.containers[0];
    expect(container.livenessProbe.httpGet.path).toBe("/livez");
    expect(container.readinessProbe.httpGet.path).toBe("/readyz");
    expect(config.server.port).toBe(container.ports[0].containerPort);
    const replicas = await Promise.all(
      Array.from({ length: kind("Deployment").spec.replicas as number }, () => startServer(config, { port: 0, host: "127.0.0.1", logger: createLogger("silent") })),
    );
    try {
      expect(replicas).toHaveLength(2);
      for (const running of replicas) {
        for (const probe of [container.livenessProbe, container.readinessProbe, container.startupProbe]) {
          expect((await fetch(running.url + probe.httpGet.path)).status).toBe(204);
        }
      }
    } finally {
      await Promise.all(replicas.map((r) => r.close()));
    }
  });

  it("runs non-root on a read-only root filesystem, rolls without losing capacity, the Secret readable by its group", () => {
    const deployment = kind("Deployment");
    expect(deployment.spec.strategy).toEqual({ type: "RollingUpdate", rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } });
    const pod = deployment.spec.template.spec;
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, fsGroup: 1000 });
    expect(pod.containers[0].securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
    expect(pod.volumes.find((v: any) => v.secret).secret.defaultMode & 0o040).toBe(0o040);
    expect(pod.containers[0].volumeMounts.map((m: any) => m.mountPath).sort()).toEqual(["/etc/credhook", "/run/secrets/credhook", "/tmp", "/var/lib/credhook"]);
    expect(kind("PodDisruptionBudget").spec.minAvailable).toBe(1);
  });
});

describe("Dockerfile", () => {
  const dockerfile = readFileSync(repo("Dockerfile"), "utf8");
  it("builds its payload with scripts/pack.mjs, runs as the unprivileged node user, and checks /livez", () => {
    expect(dockerfile).toMatch(/^FROM node:\$\{NODE_VERSION\}-bookworm-slim AS build$/m);
    expect(dockerfile).toContain("node scripts/pack.mjs pack /packs");
    expect(dockerfile).toContain("node scripts/pack.mjs install /packs /opt/credhook");
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/HEALTHCHECK [^\n]*\\\n[^\n]*\/livez/);
    expect(dockerfile).toContain('ENTRYPOINT ["/opt/credhook/node_modules/.bin/credhook"]');
  });
});
