/**
 * deploy/caddy/Caddyfile, run: Debian's Caddy terminating TLS with a generated certificate in front of a real
 * `agentwallet serve` (live mode on the local chain, set up by `agentwallet init`), with the file's second replica
 * not running. The client reaches the service over https, its made-up X-Forwarded-For is not believed, the
 * console's cookie is Secure, /metrics stays private, and the replica that is down is skipped.
 * (productionShape.e2e.test.ts runs the nginx file with two replicas and pays through it.)
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type DevChain, startDevChain } from "@agentwallet/devchain";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createPgSchema } from "../support/db.ts";
import { runCommand } from "../support/deployment.ts";
import { freePort } from "../support/net.ts";
import { poll } from "../support/poll.ts";
import { type ServerProcess, liveEnv, spawnServer } from "../support/spawnServer.ts";
import { CLIENT_ADDRESS, type HttpsCall, httpsClient, selfSignedCertificate, stopProcess } from "../support/tlsProxy.ts";

const pgBase = process.env.TEST_DATABASE_URL;
const root = resolve(import.meta.dirname, "../../../..");

describe.runIf(pgBase)("deploy/caddy/Caddyfile: Caddy with TLS in front of the server", () => {
  let dir: string;
  let dev: DevChain;
  let schema: Awaited<ReturnType<typeof createPgSchema>>;
  let server: ServerProcess;
  let caddy: ChildProcess | undefined;
  let caddyOutput = "";
  let call: HttpsCall;
  let signInOperator: (credential: string) => Promise<Response>;
  let credential: string;

  beforeAll(async () => {
    try {
      execFileSync("caddy", ["version"], { stdio: "ignore" });
    } catch {
      throw new Error("caddy is missing: apt-get install -y caddy (.ci/run installs it)");
    }
    dir = mkdtempSync(join(tmpdir(), "aw-caddy-"));
    dev = await startDevChain();
    schema = await createPgSchema();
    const { cert, key } = selfSignedCertificate(dir);
    const [proxyPort, serverPort, downPort] = await Promise.all([freePort(), freePort(), freePort()]);
    const base = `https://127.0.0.1:${proxyPort}`;

    // TRUST_PROXY=loopback, as docs/deploy.md has it for a proxy on the same host: the client (127.0.0.2) is
    // loopback too, so only Caddy replacing the client's X-Forwarded-For keeps a made-up one from being believed.
    const env = { ...liveEnv(dev, { databaseUrl: schema.url, dataDir: join(dir, "data") }), PUBLIC_BASE_URL: base, TRUST_PROXY: "loopback" };
    const init = await runCommand(["init", "--json"], env);
    expect(init.code, init.stderr).toBe(0);
    credential = JSON.parse(init.stdout).admin_credential.credential as string;
    server = await spawnServer(env, serverPort, 120_000);

    // The shipped file with this machine's ports and certificate, on loopback, without Caddy's admin endpoint or
    // its port-80 redirect, its state kept in the test's directory.
    const shipped = readFileSync(join(root, "deploy/caddy/Caddyfile"), "utf8")
      .replace("wallet.example.com {", `https://127.0.0.1:${proxyPort} {\n\tbind 127.0.0.1\n\ttls ${cert} ${key}`)
      .replace("reverse_proxy 127.0.0.1:8787 127.0.0.1:8788 {", `reverse_proxy 127.0.0.1:${serverPort} 127.0.0.1:${downPort} {`);
    expect(shipped).toContain(`127.0.0.1:${serverPort} 127.0.0.1:${downPort}`);
    const config = join(dir, "Caddyfile");
    writeFileSync(config, `{\n\tadmin off\n\tauto_https disable_redirects\n}\n\n${shipped}`);
    const caddyEnv = { ...process.env, XDG_DATA_HOME: join(dir, "caddy-data"), XDG_CONFIG_HOME: join(dir, "caddy-config") };
    execFileSync("caddy", ["validate", "--config", config, "--adapter", "caddyfile"], { env: caddyEnv, stdio: "pipe" });
    caddy = spawn("caddy", ["run", "--config", config, "--adapter", "caddyfile"], { env: caddyEnv, stdio: ["ignore", "pipe", "pipe"] });
    for (const s of [caddy.stdout!, caddy.stderr!]) s.on("data", (d) => (caddyOutput = (caddyOutput + d).slice(-20_000)));

    ({ call, signInOperator } = httpsClient(base, cert));
    // Ready when Caddy answers by itself (/metrics): no request reaches a replica before the tests' own.
    await poll(`Caddy answering over https\n${caddyOutput}`, async () => ((await call("/metrics").catch(() => undefined))?.status === 404 ? true : undefined));
  }, 240_000);

  afterAll(async () => {
    await stopProcess(caddy);
    await server?.stop();
    await dev?.stop();
    await schema?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  // First, while Caddy has not yet seen the second replica fail: round robin sends one of the first two requests there.
  test("behavior: the replica that is down is skipped, for a POST it never received too", async () => {
    for (const name of ["Failover A", "Failover B"]) {
      const created = await call("/v1/admin/projects", { auth: credential, body: { name } });
      expect(created.status, JSON.stringify(created.json)).toBe(201);
    }
    expect((await call("/v1/admin/projects", { auth: credential })).status).toBe(200);
  });

  test("behavior: a request over https reaches the server, and /metrics is not served through the proxy", async () => {
    const projects = await call("/v1/admin/projects", { auth: credential });
    expect(projects.status, JSON.stringify(projects.json)).toBe(200);
    expect((await call("/metrics")).status).toBe(404);
    expect((await fetch(`${server.baseUrl}/metrics`)).status).toBe(200);
  });

  test("behavior: a made-up X-Forwarded-For is not believed: the audit log names the address Caddy saw", async () => {
    const project = (await call("/v1/admin/projects", { auth: credential, body: { name: "Behind Caddy" } })).json.id as string;
    const paused = await call(`/v1/admin/projects/${project}/pause`, { method: "POST", auth: credential, headers: { "x-forwarded-for": "6.6.6.6" } });
    expect(paused.status, JSON.stringify(paused.json)).toBe(200);
    const audit = await call("/v1/admin/audit", { auth: credential });
    const entry = audit.json.data.find((e: any) => e.action === "project.paused" && e.target_id === project);
    expect(entry?.actor.ip, JSON.stringify(audit.json.data[0])).toBe(CLIENT_ADDRESS);
  });

  test("behavior: the console's operator cookie is Secure over https", async () => {
    const signIn = await signInOperator(credential);
    expect(signIn.status).toBe(303);
    expect(signIn.headers.get("set-cookie")).toMatch(/; Secure/);
  });
});
