import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
import { startAnvil, startDevChain, usdcBalanceOf } from "../src/index.ts";

const tempDir = mkdtempSync(join(tmpdir(), "devchain-anvil-"));
afterAll(() => rmSync(tempDir, { recursive: true, force: true }));

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function rpc(rpcUrl: string, method: string): Promise<unknown> {
  const response = await fetch(rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: [] }),
  });
  return ((await response.json()) as { result: unknown }).result;
}

test("default: anvil answers on loopback with chain id 8453, and is gone after stop()", async () => {
  const anvil = await startAnvil();
  try {
    expect(anvil.rpcUrl).toBe(`http://127.0.0.1:${anvil.port}`);
    expect(await rpc(anvil.rpcUrl, "eth_chainId")).toBe("0x2105");
    expect(isAlive(anvil.pid)).toBe(true);
  } finally {
    await anvil.stop();
  }
  expect(isAlive(anvil.pid)).toBe(false);
  await expect(fetch(anvil.rpcUrl)).rejects.toThrow();
  await anvil.stop(); // idempotent
});

test("behavior: honours an explicit chain id", async () => {
  const anvil = await startAnvil({ chainId: 31337 });
  try {
    expect(await rpc(anvil.rpcUrl, "eth_chainId")).toBe("0x7a69");
  } finally {
    await anvil.stop();
  }
});

test("error: a port already taken fails, without mistaking the other node for a new one", async () => {
  const first = await startAnvil();
  try {
    await expect(startAnvil({ port: first.port })).rejects.toThrow(/port \d+ on 127.0.0.1 is already in use/);
  } finally {
    await first.stop();
  }
});

test("behavior: with statePath, a restarted chain keeps TestUSDC and its balances", async () => {
  const statePath = join(tempDir, "chain.json");
  const first = await startDevChain({ statePath });
  const holder = first.accounts.other.address;
  try {
    await first.mint(holder, 1_234_567n);
  } finally {
    await first.stop();
  }

  const second = await startDevChain({ statePath });
  try {
    expect(second.usdcAddress).toBe(first.usdcAddress);
    expect(await usdcBalanceOf(second.rpcUrl, second.usdcAddress, holder)).toBe(1_234_567n);
    await second.mint(holder, 1n);
    expect(await usdcBalanceOf(second.rpcUrl, second.usdcAddress, holder)).toBe(1_234_568n);
  } finally {
    await second.stop();
  }
});

test("behavior: anvil dies with the process that started it, even when that process is SIGKILLed", async () => {
  const anvilModule = new URL("../src/anvil.ts", import.meta.url).href;
  const parent = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      "--input-type=module",
      "-e",
      `const { startAnvil } = await import(${JSON.stringify(anvilModule)});
       const anvil = await startAnvil();
       console.log(anvil.pid);
       setInterval(() => {}, 1_000);`,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  try {
    const [line] = (await once(parent.stdout!, "data")) as [Buffer];
    const anvilPid = Number(line.toString().trim());
    expect(isAlive(anvilPid)).toBe(true);

    parent.kill("SIGKILL");
    await once(parent, "exit");
    const deadline = Date.now() + 5_000;
    while (isAlive(anvilPid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(isAlive(anvilPid)).toBe(false);
  } finally {
    parent.kill("SIGKILL");
  }
});

test("behavior: old blocks' states are not kept (anvil would otherwise keep every one, in memory and in files that outlive it)", async () => {
  const anvil = await startAnvil();
  const call = async (method: string, params: unknown[]) => {
    const response = await fetch(anvil.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
    return (await response.json()) as { result?: unknown; error?: { message: string } };
  };
  try {
    const account = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
    await call("anvil_mine", ["0x100"]);
    expect((await call("eth_getBalance", [account, "latest"])).result).toBeDefined();
    const old = await call("eth_getBalance", [account, "0x1"]);
    expect(old.result).toBeUndefined();
    expect(old.error?.message).toBeTruthy();
    // Receipts and blocks stay: the first block is still there.
    expect(((await call("eth_getBlockByNumber", ["0x1", false])).result as { number: string }).number).toBe("0x1");
  } finally {
    await anvil.stop();
  }
});
