// The stand-in docs/deploy.md's rehearsal runs (`npm run stand-in -w @agentwallet/devchain`): what it prints
// answers as Base, USDC, Bridge and an x402 merchant would, its `mint` subcommand funds an address, and SIGTERM
// stops it all.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, expect, test } from "vitest";
import { BASE_USDC_ADDRESS, testUsdcArtifact, usdcBalanceOf } from "../src/index.ts";

const packageDir = resolve(import.meta.dirname, "..");
const script = ["--import", "tsx", "scripts/stand-in.ts"];
const WALLET = "0x00000000000000000000000000000000000a11ce";

let standIn: ChildProcess | undefined;
afterAll(async () => {
  if (standIn?.exitCode === null) {
    standIn.kill("SIGTERM");
    await once(standIn, "exit");
  }
});

async function rpc(url: string, method: string, params: unknown[] = []): Promise<any> {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
  return ((await res.json()) as { result: unknown }).result;
}

/** The settings the stand-in prints, once it printed its last line. */
async function printedSettings(child: ChildProcess): Promise<{ env: Record<string, string>; merchant: string }> {
  let out = "";
  child.stderr!.on("data", (d) => (out += d));
  for await (const chunk of child.stdout!) {
    out += chunk;
    if (out.includes("x402 merchant")) break;
  }
  const env = Object.fromEntries([...out.matchAll(/^([A-Z0-9_]+)=(.*)$/gm)].map((m) => [m[1]!, m[2]!.replace(/^"(.*)"$/, "$1")]));
  const merchant = /x402 merchant.*: (http:\/\/\S+)/.exec(out)?.[1];
  if (!merchant) throw new Error(`the stand-in printed no merchant:\n${out}`);
  return { env, merchant };
}

test("behavior: prints settings that answer as Base, USDC, Bridge and a merchant; mints; stops on SIGTERM", async () => {
  standIn = spawn(process.execPath, script, { cwd: packageDir, stdio: ["ignore", "pipe", "pipe"] });
  const { env, merchant } = await printedSettings(standIn);

  expect(Object.keys(env)).toEqual(["BASE_RPC_URL", "USDC_ADDRESS", "RELAYER_PRIVATE_KEY", "TREASURY_ADDRESS", "BRIDGE_BASE_URL", "BRIDGE_API_KEY", "BRIDGE_CUSTOMER_ID", "BRIDGE_WEBHOOK_PUBLIC_KEY"]);
  expect(await rpc(env.BASE_RPC_URL!, "eth_chainId")).toBe("0x2105");
  expect(env.USDC_ADDRESS).toBe(BASE_USDC_ADDRESS);
  expect(await rpc(env.BASE_RPC_URL!, "eth_getCode", [env.USDC_ADDRESS, "latest"])).toBe(testUsdcArtifact.deployedBytecode.toLowerCase());
  expect(env.BRIDGE_WEBHOOK_PUBLIC_KEY).toMatch(/^-----BEGIN PUBLIC KEY-----\\n.*\\n-----END PUBLIC KEY-----$/);
  const customer = await fetch(`${env.BRIDGE_BASE_URL}/v0/customers/${env.BRIDGE_CUSTOMER_ID}`, { headers: { "api-key": env.BRIDGE_API_KEY! } });
  expect(customer.status).toBe(200);
  expect((await fetch(merchant)).status).toBe(402);

  const minted = await promisify(execFile)(process.execPath, [...script, "mint", WALLET, "2.5"], { cwd: packageDir, env: { ...process.env, BASE_RPC_URL: env.BASE_RPC_URL } });
  expect(minted.stdout).toMatch(/^minted 2\.5 test USDC to 0x0{35}a11ce: 0x[0-9a-f]{64}\n$/);
  expect(await usdcBalanceOf(env.BASE_RPC_URL!, BASE_USDC_ADDRESS, WALLET)).toBe(2_500_000n);

  standIn.kill("SIGTERM");
  const [code] = await once(standIn, "exit");
  expect(code).toBe(0);
  await expect(fetch(env.BASE_RPC_URL!)).rejects.toThrow();
}, 120_000);
