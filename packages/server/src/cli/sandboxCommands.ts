/** Sandbox-only CLI commands: mint test USDC to a project, and print the running sandbox's details. */
import { type Address, type Hex, createWalletClient, createPublicClient, http, parseAbi, defineChain } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { readSandboxFile } from "../chain/connectSandbox.ts";
import { loadCustody } from "../deps.ts";
import { openLedger } from "../ledger/open.ts";
import { parseDecimalAmount, formatUsdc } from "../money.ts";
import type { Command } from "./command.ts";
import { CliError, UsageError } from "./command.ts";

type SandboxInfo = NonNullable<ReturnType<typeof readSandboxFile>>;

function readSandbox(dataDir: string): SandboxInfo {
  const info = readSandboxFile(dataDir);
  if (!info) throw new CliError(`No sandbox is running with data dir ${dataDir}. Start one with \`npm start\` (or \`agentwallet serve\`).`);
  return info;
}

export const sandboxInfo: Command = async ({ config, io }) => {
  if (config.mode !== "sandbox") throw new CliError("sandbox info is for sandbox mode (BASE_RPC_URL unset).");
  const s = readSandbox(config.dataDir);
  const data = { base_url: s.base_url, rpc_url: s.rpc_url, chain_id: s.chain_id, usdc_address: s.usdc_address, relayer_address: s.relayer_address, treasury_address: s.treasury_address, facilitator_url: s.facilitator_url ?? null, demo_merchant_url: s.demo_merchant_url ?? null, demo_merchant_paid_url: s.demo_merchant_paid_url ?? null };
  io.out(Object.entries(data).map(([k, v]) => `${k.padEnd(22)} ${v}`).join("\n"), data);
  return 0;
};

export const fund: Command = async ({ config, options, io }) => {
  if (config.mode !== "sandbox") throw new CliError("fund mints test USDC and is only for sandbox mode; fund a live project by sending USDC on Base to its deposit address.");
  const projectId = options.project;
  if (typeof projectId !== "string") throw new UsageError("--project is required");
  const amountText = options["amount-usdc"];
  if (typeof amountText !== "string") throw new UsageError("--amount-usdc is required");
  const parsed = parseDecimalAmount(Number(amountText), 6);
  if (!/^\d+(\.\d+)?$/.test(amountText) || !parsed.ok) throw new UsageError(`--amount-usdc must be a positive USDC amount with at most 6 decimals (got "${amountText}")`);
  if (parsed.units > 1_000_000 * 1_000_000) throw new UsageError("--amount-usdc must be at most 1,000,000 in the sandbox");
  const s = readSandbox(config.dataDir);
  const { ledger, opened } = await openLedger(config);
  try {
    const project = await ledger.projects.get(projectId);
    if (!project) throw new CliError(`no project with id ${projectId}`);
    const address = (project.wallet_address ?? (await ledger.projects.setWalletAddress(projectId, loadCustody(config).addressOf(project.wallet_index)))) as Address;
    const chain = defineChain({ id: s.chain_id, name: "sandbox", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [s.rpc_url] } } });
    const wallet = createWalletClient({ chain, account: privateKeyToAccount(s.minter_private_key), transport: http(s.rpc_url, { timeout: 10_000 }) });
    const pub = createPublicClient({ chain, transport: http(s.rpc_url, { timeout: 10_000 }), pollingInterval: 100 });
    const hash = await wallet.writeContract({ address: s.usdc_address, abi: parseAbi(["function mint(address,uint256)"]), functionName: "mint", args: [address, BigInt(parsed.units)] });
    await pub.waitForTransactionReceipt({ hash, timeout: 15_000 });
    // The running server's watcher credits it like any deposit; wait (bounded) so scripts can go on.
    let credited = false;
    for (let i = 0; i < 150 && !credited; i++) {
      credited = (await ledger.deposits.statusOf(hash)) === "credited";
      if (!credited) await new Promise((r) => setTimeout(r, 200));
    }
    io.out(
      `Minted ${formatUsdc(parsed.units)} test USDC to ${address} (tx ${hash}); ${credited ? "credited to the project's balance" : "not credited yet: the watcher will credit it after confirmations"}.`,
      { project_id: projectId, address, amount_micros: parsed.units, tx_hash: hash, credited },
    );
    return 0;
  } finally {
    await opened.close();
  }
};
