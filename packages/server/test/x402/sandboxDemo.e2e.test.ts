// `npm start` runs a demo x402 merchant beside the sandbox and prints a curl that pays it: a newcomer's
// first minute, followed literally — start, run the printed fund command, send the printed request —
// and `sandbox info --json` names the facilitator and the demo merchant.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, expect, test } from "vitest";
import { agentwalletBin } from "../support/testBuild.ts";

const root = resolve(import.meta.dirname, "../../../..");
// The run's bundle of the service (support/testBuild.ts).
const bin = agentwalletBin();
const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), "aw-x402-demo-"));
// The sandbox decides the x402 settings for itself: nothing of the test's environment leaks in.
const { X402_ALLOW_HTTP: _h, X402_ALLOW_PRIVATE_NETWORKS: _p, ...baseEnv } = process.env;
const env = { ...baseEnv, DATABASE_URL: "", BASE_RPC_URL: "", LOG_LEVEL: "warn" };
let child: ChildProcess | undefined;

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child!.once("exit", r));
    child.kill("SIGTERM");
    await exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

async function startSandbox(): Promise<string> {
  child = spawn(process.execPath, [bin, "serve", "--port", "0", "--data-dir", dir], { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  return new Promise((resolveBanner, reject) => {
    const timer = setTimeout(() => reject(new Error(`sandbox did not print the x402 demo within 60 s:\n${out}`)), 60_000);
    child!.stdout!.on("data", () => {
      if (/curl -s \S+\/v1\/pay .*'\n/.test(out)) {
        clearTimeout(timer);
        resolveBanner(out);
      }
    });
    child!.once("exit", (code) => reject(new Error(`sandbox exited with ${code}:\n${out}`)));
  });
}

test("behavior: the printed fund command and curl pay the demo merchant through POST /v1/pay", async () => {
  const banner = await startSandbox();

  const fundLine = /npm run agentwallet -- (fund .+)\n/.exec(banner)![1]!;
  const { stdout } = await run(process.execPath, [bin, ...fundLine.split(" "), "--data-dir", dir, "--json"], { cwd: root, env, timeout: 30_000 });
  expect(JSON.parse(stdout)).toMatchObject({ amount_micros: 1_000_000, credited: true });

  const curl = /curl -s (\S+) -H "Authorization: Bearer (\S+)" -H "Content-Type: application\/json" -d '(.+)'\n/.exec(banner)!;
  const [, url, token, body] = curl;
  const answer = await fetch(url!, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body });
  const payment = (await answer.json()) as Record<string, unknown> & { response: { status_code: number; body: string } };
  expect(answer.status, JSON.stringify(payment)).toBe(200);
  expect(payment).toMatchObject({ rail: "x402", amount_charged: 10_000, fee: 200, currency: "usdc", status: "processing" });
  expect(JSON.parse(payment.response.body)).toEqual({ paid: true });

  const base = url!.replace(/\/v1\/pay$/, "");
  let statuses: string[] = [];
  for (let i = 0; i < 600 && !(statuses.length === 2 && statuses.every((s) => s === "completed")); i++) {
    const read = await fetch(`${base}/v1/transactions?limit=2`, { headers: { authorization: `Bearer ${token}` } });
    // A loaded machine can meet the token's rate limit while settlement runs: wait as a client would.
    if (read.status === 429) {
      await new Promise((r) => setTimeout(r, 1000 * Number(read.headers.get("retry-after") ?? 1)));
      continue;
    }
    expect(read.status).toBe(200);
    const list = (await read.json()) as { transactions: { status: string }[] };
    statuses = list.transactions.map((t) => t.status);
    await new Promise((r) => setTimeout(r, 100));
  }
  expect(statuses).toEqual(["completed", "completed"]);
  // The settlement the merchant reported, proven on-chain after the answer.
  const shown = await fetch(`${base}/v1/transactions/${payment.id as string}`, { headers: { authorization: `Bearer ${token}` } });
  expect(((await shown.json()) as { tx_hash: string | null }).tx_hash).toMatch(/^0x[0-9a-f]{64}$/);

  const info = JSON.parse((await run(process.execPath, [bin, "sandbox", "info", "--json", "--data-dir", dir], { cwd: root, env })).stdout);
  expect(info.facilitator_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  expect(info.demo_merchant_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  expect(JSON.parse(body!).recipient).toBe(`${info.demo_merchant_url}/paid`);

  // The sandbox pays exactly the loopback targets it runs itself: not the chain's RPC, not its own API.
  for (const target of [info.rpc_url, `${base}/metrics`, `${base}/v1/balance`]) {
    const refused = await fetch(`${base}/v1/x402/pay`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify({ url: target, method: "POST", body: "{}", max_amount_usdc: 10_000 }) });
    expect(refused.status, target).toBe(400);
    expect(((await refused.json()) as { code: string }).code).toBe("host_not_allowed");
  }
  // Spawns the sandbox and the CLI: tens of seconds on a loaded machine.
}, 180_000);
