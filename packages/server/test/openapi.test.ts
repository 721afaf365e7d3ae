/**
 * The OpenAPI document as the server serves it: `servers` is PUBLIC_BASE_URL or the listen address, every
 * operation has a unique operationId, amounts cannot be negative, and `redocly lint` (recommended rules,
 * redocly.yaml) finds neither an error nor a warning.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { buildApp, createTestContext, type TestContext } from "./support/context.ts";

const root = resolve(import.meta.dirname, "../../..");
const run = promisify(execFile);
type Doc = { servers: { url: string }[]; paths: Record<string, Record<string, { operationId?: string }>>; components: { schemas: Record<string, { properties?: Record<string, { type?: string; minimum?: number; exclusiveMinimum?: number }> }> } };

describe("OpenAPI document", () => {
  let t: TestContext;
  let app: ReturnType<typeof buildApp>;
  let origin: string;
  let doc: Doc;
  const dir = mkdtempSync(join(tmpdir(), "aw-openapi-"));

  beforeAll(async () => {
    t = await createTestContext("sqlite");
    app = buildApp(t.ctx);
    origin = await app.listen({ port: 0, host: "127.0.0.1" });
    doc = (await (await fetch(`${origin}/openapi.json`)).json()) as Doc;
  });
  afterAll(async () => {
    await app.close();
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("servers: the listen address without PUBLIC_BASE_URL, PUBLIC_BASE_URL when set", async () => {
    expect(origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(doc.servers).toEqual([{ url: origin }]);
    // A configuration is frozen once loaded: a deployment with PUBLIC_BASE_URL is one loaded with it.
    const withPublic = await createTestContext("sqlite", { env: { PUBLIC_BASE_URL: "https://wallet.example.com" } });
    const publicApp = buildApp(withPublic.ctx);
    try {
      const publicOrigin = await publicApp.listen({ port: 0, host: "127.0.0.1" });
      const pub = (await (await fetch(`${publicOrigin}/openapi.json`)).json()) as Doc;
      expect(pub.servers).toEqual([{ url: "https://wallet.example.com" }]);
    } finally {
      await publicApp.close();
      await withPublic.close();
    }
  });

  test("every operation has an operationId, unique in the document", () => {
    const ids = Object.values(doc.paths).flatMap((methods) => Object.values(methods).map((op) => op.operationId));
    expect(ids.length).toBeGreaterThanOrEqual(7);
    expect(ids.every((id) => typeof id === "string" && /^[a-z][A-Za-z0-9]*$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(doc.paths["/v1/pay"]!.post!.operationId).toBe("pay");
  });

  test("no amount, fee or balance can be negative", () => {
    const loose: string[] = [];
    for (const [name, schema] of Object.entries(doc.components.schemas)) {
      for (const [prop, p] of Object.entries(schema.properties ?? {})) {
        const numeric = p.type === "integer" || p.type === "number";
        if (numeric && /amount|fee|available|pending|total/.test(prop) && !((p.minimum ?? -1) >= 0 || (p.exclusiveMinimum ?? -1) >= 0)) loose.push(`${name}.${prop}`);
      }
    }
    expect(loose).toEqual([]);
  });

  test("the probes /healthz and /readyz are documented as public, with what they answer", async () => {
    const paths = doc.paths as unknown as Record<string, { get?: { security?: unknown[]; responses: Record<string, { content: { "application/json": { schema: { $ref: string } } } }> } }>;
    for (const [path, ok, schema] of [["/healthz", "200", "Health"], ["/readyz", "200", "Readiness"]] as const) {
      const op = paths[path]?.get;
      expect(op, path).toBeDefined();
      expect(op!.security).toEqual([]);
      expect(op!.responses[ok]!.content["application/json"].schema.$ref).toBe(`#/components/schemas/${schema}`);
      const answer = await fetch(`${origin}${path}`);
      expect(answer.status).toBe(200);
      const body = (await answer.json()) as Record<string, unknown>;
      expect(Object.keys(body).every((k) => k in (doc.components.schemas[schema]!.properties ?? {}))).toBe(true);
    }
    expect(paths["/readyz"]!.get!.responses["503"]).toBeDefined();
  });

  test("redocly lint: zero errors, zero warnings", async () => {
    const file = join(dir, "openapi.json");
    writeFileSync(file, JSON.stringify(doc));
    const cli = createRequire(import.meta.url).resolve("@redocly/cli/package.json").replace(/package\.json$/, "bin/cli.js");
    let stdout: string;
    try {
      ({ stdout } = await run(process.execPath, [cli, "lint", file, "--config", join(root, "redocly.yaml"), "--format=json"], { cwd: root, timeout: 60_000, env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" } }));
    } catch (err) {
      stdout = (err as { stdout: string }).stdout; // exit 1 on errors: the report below names them
    }
    const report = JSON.parse(stdout) as { totals: { errors: number; warnings: number }; problems: { ruleId: string; message: string; location: { pointer: string }[] }[] };
    expect(report.problems.map((p) => `${p.ruleId} ${p.location[0]?.pointer}: ${p.message}`)).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
  }, 120_000);
});
