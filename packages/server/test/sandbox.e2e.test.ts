import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { Balance, TransactionList } from "@agentwallet/api";
import { afterAll, describe, expect, test } from "vitest";

const root = resolve(import.meta.dirname, "../../..");
const bin = join(root, "packages/server/bin/agentwallet.js");
const run = promisify(execFile);

/** Starts `agentwallet serve` like `npm start` does and resolves once the banner is printed. */
export async function spawnSandbox(dataDir: string, env: NodeJS.ProcessEnv = {}) {
  const started = Date.now();
  const child = spawn(process.execPath, [bin, "serve", "--port", "0", "--data-dir", dataDir], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: "", BASE_RPC_URL: "", LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const banner = await new Promise<string>((resolveBanner, reject) => {
    const timer = setTimeout(() => reject(new Error(`sandbox did not start within 20 s:\n${out}`)), 20_000);
    const check = () => {
      if (/Try:\n\s+curl/.test(out)) {
        clearTimeout(timer);
        resolveBanner(out);
      }
    };
    child.stdout!.on("data", check);
    child.once("exit", (code) => reject(new Error(`sandbox exited with ${code}:\n${out}`)));
  });
  const field = (label: string) => new RegExp(`${label}\\s+(\\S+)`).exec(banner)![1]!;
  return { child, ms: Date.now() - started, baseUrl: field("Base URL"), token: field("Demo token"), projectId: field("Demo project"), address: field("Deposit address") };
}

export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  const t = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(t);
}

describe("sandbox: npm start on a fresh data dir", () => {
  const dir = mkdtempSync(join(tmpdir(), "aw-sandbox-"));
  const children: ChildProcess[] = [];
  afterAll(async () => {
    await Promise.all(children.map(stopProcess));
    rmSync(dir, { recursive: true, force: true });
  });

  test("serves, the printed token reads the balance, and the README walkthrough works literally", async () => {
    // Start-up time is measured by `npm run bench -- start`, not asserted here.
    const s = await spawnSandbox(dir);
    children.push(s.child);
    const auth = { authorization: `Bearer ${s.token}` };
    const bal = Balance.parse(await (await fetch(`${s.baseUrl}/v1/balance`, { headers: auth })).json());
    expect(bal).toMatchObject({ project_id: s.projectId, available: 0, wallet_address: s.address });

    const { stdout } = await run(process.execPath, [bin, "fund", "--project", s.projectId, "--amount-usdc", "25", "--data-dir", dir, "--json"], { cwd: root, env: { ...process.env, DATABASE_URL: "", BASE_RPC_URL: "" }, timeout: 30_000 });
    expect(JSON.parse(stdout)).toMatchObject({ amount_micros: 25_000_000, credited: true });
    const after = Balance.parse(await (await fetch(`${s.baseUrl}/v1/balance`, { headers: auth })).json());
    expect(after).toMatchObject({ available: 25_000_000, total_funded: 25_000_000 });
    const list = TransactionList.parse(await (await fetch(`${s.baseUrl}/v1/transactions`, { headers: auth })).json());
    expect(list.transactions[0]).toMatchObject({ type: "usdc_fund", amount: 25_000_000, status: "completed" });

    const info = JSON.parse((await run(process.execPath, [bin, "sandbox", "info", "--json", "--data-dir", dir], { cwd: root, env: { ...process.env, BASE_RPC_URL: "" } })).stdout);
    expect(info).toMatchObject({ base_url: s.baseUrl, chain_id: 8453 });
    expect(info.rpc_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(info.usdc_address).toMatch(/^0x[0-9a-fA-F]{40}$/);

    // Pay, then check operator commands: workers run-once and reconcile against the running sandbox.
    const pay = await fetch(`${s.baseUrl}/v1/pay`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ recipient: "0x90F79bf6EB2c4f870365E785982E1f101E93b906", amount_usd: 2 }) });
    expect(pay.status).toBe(201);
    const cliEnv = { cwd: root, env: { ...process.env, DATABASE_URL: "", BASE_RPC_URL: "" }, timeout: 30_000 };
    for (let i = 0; i < 50; i++) {
      const once = JSON.parse((await run(process.execPath, [bin, "workers", "run-once", "--json", "--data-dir", dir], cliEnv)).stdout);
      if (once.still_open === 0) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const rec = JSON.parse((await run(process.execPath, [bin, "reconcile", "--json", "--data-dir", dir], cliEnv)).stdout);
    expect(rec.ok).toBe(true);
    expect(rec.rows.find((r: { project_id: string }) => r.project_id === s.projectId)).toMatchObject({ onchain_micros: 22_960_000, available_micros: 22_960_000, drift_micros: 0 });

    // A restart reuses the same demo project and token, and the chain keeps its state.
    await stopProcess(s.child);
    const again = await spawnSandbox(dir);
    children.push(again.child);
    expect(again.projectId).toBe(s.projectId);
    expect(again.token).toBe(s.token);
    const kept = Balance.parse(await (await fetch(`${again.baseUrl}/v1/balance`, { headers: auth })).json());
    expect(kept.available).toBe(22_960_000);
    // Two servers and five CLI processes, each loading the service (and a server its settlement thread):
    // 27 s alone on two slow cores, up to a minute beside the rest of the suite.
  }, 120_000);
});
