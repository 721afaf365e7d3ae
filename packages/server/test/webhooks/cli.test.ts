// The operator's webhook commands: `webhooks create` prints the whsec_ secret once (stored encrypted),
// one JSON shape per endpoint, one `error: …` line on a refusal; URLs checked as the fetcher will.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, test } from "vitest";
import { commands } from "../../src/cli/commands.ts";
import { CliError } from "../../src/cli/command.ts";
import { loadConfig } from "../../src/config.ts";
import { checkWebhookUrl } from "../../src/services/webhooks/endpoints.ts";
import { agentwalletBin } from "../support/testBuild.ts";

const run = promisify(execFile);
const root = resolve(import.meta.dirname, "../../../..");
// The run's bundle of the service (support/testBuild.ts).
const bin = agentwalletBin();

describe("agentwallet webhooks", () => {
  const dir = mkdtempSync(join(tmpdir(), "aw-whcli-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const config = loadConfig({ AGENTWALLET_DATA_DIR: dir });
  /** A command in this process (the binary costs seconds to start): its exit code and JSON output. */
  async function inProcess(name: string, args: string[], options: Record<string, string> = {}) {
    let data: any;
    await commands[name]!({ config, args, options, io: { json: true, out: (_h, d) => void (data = d) } });
    return data;
  }
  async function binary(args: string[]) {
    try {
      const { stdout, stderr } = await run(process.execPath, [bin, ...args, "--data-dir", dir], { cwd: root, env: { ...process.env, BASE_RPC_URL: "", DATABASE_URL: "" }, timeout: 60_000 });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  }

  test("create prints the secret once; list, deliveries, delete; refusals are one error line", async () => {
    await inProcess("migrate", []);
    const project = await inProcess("projects create", [], { name: "hooks" });
    const created = await binary(["webhooks", "create", "--project", project.id, "--url", "http://127.0.0.1:9/hooks#x", "--events", "payment.completed,payment.failed", "--json"]);
    expect(created.code, created.stderr).toBe(0);
    const endpoint = JSON.parse(created.stdout);
    expect(endpoint).toMatchObject({ project_id: project.id, url: "http://127.0.0.1:9/hooks", events: ["payment.completed", "payment.failed"], state: "enabled", disabled_at: null, failing_since: null });
    expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    // Stored encrypted: the database files never hold the secret.
    const bytes = readdirSync(dir).filter((f) => f.startsWith("agentwallet.db")).map((f) => readFileSync(join(dir, f)).toString("latin1")).join("");
    expect(bytes).not.toContain(endpoint.secret.slice(6, 30));

    const { secret: _shownOnce, ...shape } = endpoint;
    expect(await inProcess("webhooks list", [], { project: project.id })).toEqual([shape]);
    expect(await inProcess("webhooks deliveries", [endpoint.id])).toEqual([]);

    const refused = await binary(["webhooks", "create", "--project", project.id, "--url", "ftp://example.com/x"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr.split("\n").filter((l) => l && !l.startsWith("database: "))).toEqual([expect.stringMatching(/^error: Webhook URL "ftp:\/\/example.com\/x" must be http:\/\/ or https:\/\/\.$/)]);
    await expect(inProcess("webhooks create", [], { project: project.id, url: "https://example.com", events: "payment.done" })).rejects.toThrow(/Unknown event type "payment.done"/);
    await expect(inProcess("webhooks redeliver", ["evt_nope"])).rejects.toThrow(CliError);

    expect(await inProcess("webhooks delete", [endpoint.id])).toEqual({ id: endpoint.id, deleted: true });
    expect(await inProcess("webhooks list", [], { project: project.id })).toEqual([]);
    await expect(inProcess("webhooks delete", [endpoint.id])).rejects.toThrow(/No webhook endpoint/);
  });

  test("live mode delivers only over https to public hosts; the sandbox also takes a loopback receiver", () => {
    expect(checkWebhookUrl("https://hooks.example.com/aw", "live")).toBe("https://hooks.example.com/aw");
    for (const [url, why] of [
      ["http://hooks.example.com/aw", /must be https/],
      ["https://localhost:8443/x", /is local/],
      ["https://127.0.0.1/x", /loopback/],
      ["https://10.1.2.3/x", /private network/],
      ["https://[::1]/x", /loopback/],
      ["https://user:pw@example.com/x", /user:password@/],
    ] as const) {
      expect(() => checkWebhookUrl(url, "live"), url).toThrow(why);
    }
    expect(checkWebhookUrl("http://localhost:4000/x", "sandbox")).toBe("http://localhost:4000/x");
  });
});
