import { randomBytes } from "node:crypto";
import {
  bytesToHex,
  createPublicClient,
  createWalletClient,
  encodeFunctionData,
  http,
  parseEventLogs,
  parseSignature,
  type Address,
  type Hex,
} from "viem";
import { privateKeyToAccount, signTypedData } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  MULTICALL3_ADDRESS,
  devAccounts,
  multicall3Abi,
  startDevChain,
  testUsdcAbi,
  testUsdcArtifact,
  usdcBalanceOf,
  type DevAccount,
  type DevChain,
} from "../src/index.ts";

let chain: DevChain;
let publicClient: ReturnType<typeof createPublicClient>;

beforeAll(async () => {
  chain = await startDevChain();
  publicClient = createPublicClient({ transport: http(chain.rpcUrl), pollingInterval: 50 });
});
afterAll(async () => {
  await chain?.stop();
});

const nowSeconds = () => BigInt(Math.floor(Date.now() / 1000));
const freshNonce = (): Hex => bytesToHex(randomBytes(32));

type Authorization = {
  from: Address;
  to: Address;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
};

const authorizationTypes = (primaryType: "TransferWithAuthorization" | "ReceiveWithAuthorization") =>
  ({
    [primaryType]: [
      { name: "from", type: "address" },
      { name: "to", type: "address" },
      { name: "value", type: "uint256" },
      { name: "validAfter", type: "uint256" },
      { name: "validBefore", type: "uint256" },
      { name: "nonce", type: "bytes32" },
    ],
  }) as const;

const domain = () =>
  ({ name: "USD Coin", version: "2", chainId: chain.chainId, verifyingContract: chain.usdcAddress }) as const;

function authorization(from: DevAccount, to: Address, value: bigint, overrides: Partial<Authorization> = {}): Authorization {
  return { from: from.address, to, value, validAfter: 0n, validBefore: nowSeconds() + 3600n, nonce: freshNonce(), ...overrides };
}

function signAuthorization(
  signer: DevAccount,
  message: Authorization,
  primaryType: "TransferWithAuthorization" | "ReceiveWithAuthorization" = "TransferWithAuthorization",
): Promise<Hex> {
  return signTypedData({ privateKey: signer.privateKey, domain: domain(), types: authorizationTypes(primaryType), primaryType, message });
}

function signCancellation(signer: DevAccount, nonce: Hex): Promise<Hex> {
  return signTypedData({
    privateKey: signer.privateKey,
    domain: domain(),
    types: { CancelAuthorization: [{ name: "authorizer", type: "address" }, { name: "nonce", type: "bytes32" }] },
    primaryType: "CancelAuthorization",
    message: { authorizer: signer.address, nonce },
  });
}

/** Sends a TestUSDC call from `sender` and waits for it; rejects with the revert reason on failure. */
async function send(sender: DevAccount, call: { functionName: string; args: readonly unknown[] }): Promise<void> {
  const wallet = createWalletClient({ account: privateKeyToAccount(sender.privateKey), transport: http(chain.rpcUrl) });
  const data = encodeFunctionData({ abi: testUsdcAbi, ...call } as Parameters<typeof encodeFunctionData>[0]);
  // eth_call first, so a revert surfaces with its reason instead of as a failed receipt.
  await publicClient.call({ account: sender.address, to: chain.usdcAddress, data });
  const hash = await wallet.sendTransaction({ chain: null, to: chain.usdcAddress, data });
  const receipt = await publicClient.waitForTransactionReceipt({ hash, timeout: 30_000 });
  expect(receipt.status).toBe("success");
}

const balance = (address: Address) => usdcBalanceOf(chain.rpcUrl, chain.usdcAddress, address);
const authorizationState = (authorizer: Address, nonce: Hex) =>
  publicClient.readContract({ address: chain.usdcAddress, abi: testUsdcAbi, functionName: "authorizationState", args: [authorizer, nonce] });

function withVrs(a: Authorization, signature: Hex) {
  const { v, r, s } = parseSignature(signature);
  return [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce, Number(v), r, s] as const;
}
const withBytes = (a: Authorization, signature: Hex) =>
  [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce, signature] as const;

describe("deployment", () => {
  test("default: TestUSDC is deployed at the deployer's first contract address with USDC's metadata", async () => {
    expect(chain.usdcAddress).toBe("0x5FbDB2315678afecb367f032d93F642f64180aa3");
    expect(await publicClient.getCode({ address: chain.usdcAddress })).toBe(testUsdcArtifact.deployedBytecode);
    const read = (functionName: "name" | "symbol" | "decimals" | "version") =>
      publicClient.readContract({ address: chain.usdcAddress, abi: testUsdcAbi, functionName });
    expect(await read("name")).toBe("USD Coin");
    expect(await read("symbol")).toBe("USDC");
    expect(await read("decimals")).toBe(6);
    expect(await read("version")).toBe("2");
  });

  test("behavior: the accounts are anvil's well-known test accounts in their roles", () => {
    expect(chain.accounts.deployer.address).toBe("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266");
    expect(chain.accounts.payer.address).toBe("0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc");
    expect(chain.accounts.other.address).toBe("0x976EA74026E726554dB657fA54763abd0C3a0aa9");
    expect(chain.accounts.offramp.address).toBe("0x14dC79964da2C08b23698B3D3cc7Ca32193d9955");
    expect(privateKeyToAccount(chain.accounts.facilitator.privateKey).address).toBe(chain.accounts.facilitator.address);
    expect(new Set(Object.values(chain.accounts).map((a) => a.address)).size).toBe(8);
  });
});

describe("ERC-20", () => {
  test("behavior: mint credits the holder and emits Transfer from the zero address", async () => {
    const holder = chain.accounts.treasury.address;
    const before = await balance(holder);
    const hash = await chain.mint(holder, 2_500_000n);
    expect(await balance(holder)).toBe(before + 2_500_000n);
    const receipt = await publicClient.getTransactionReceipt({ hash });
    const transfers = parseEventLogs({ abi: testUsdcAbi, eventName: "Transfer", logs: receipt.logs });
    expect(transfers.map((l) => l.args)).toEqual([
      { from: "0x0000000000000000000000000000000000000000", to: holder, value: 2_500_000n },
    ]);
  });

  test("behavior: approve and transferFrom move funds and spend the allowance", async () => {
    const { relayer, other } = chain.accounts;
    const owner = chain.accounts.treasury;
    await chain.mint(owner.address, 1_000_000n);
    await send(owner, { functionName: "approve", args: [relayer.address, 600_000n] });
    const before = await balance(other.address);
    await send(relayer, { functionName: "transferFrom", args: [owner.address, other.address, 400_000n] });
    expect(await balance(other.address)).toBe(before + 400_000n);
    expect(
      await publicClient.readContract({ address: chain.usdcAddress, abi: testUsdcAbi, functionName: "allowance", args: [owner.address, relayer.address] }),
    ).toBe(200_000n);
    await expect(
      send(relayer, { functionName: "transferFrom", args: [owner.address, other.address, 200_001n] }),
    ).rejects.toThrow(/transfer amount exceeds allowance/);
  });

  test("error: a transfer beyond the balance reverts", async () => {
    const { other, merchant } = chain.accounts;
    const all = await balance(other.address);
    await expect(send(other, { functionName: "transfer", args: [merchant.address, all + 1n] })).rejects.toThrow(
      /transfer amount exceeds balance/,
    );
  });
});

describe("EIP-3009", () => {
  const { payer, relayer, merchant } = devAccounts();

  beforeAll(async () => {
    await chain.mint(chain.accounts.payer.address, 100_000_000n);
  });

  test("behavior: transferWithAuthorization (v, r, s) signed by the payer moves USDC, submitted by anyone", async () => {
    const auth = authorization(payer, merchant.address, 1_250_000n);
    const signature = await signAuthorization(payer, auth);
    const [payerBefore, merchantBefore] = [await balance(payer.address), await balance(merchant.address)];
    await send(relayer, { functionName: "transferWithAuthorization", args: withVrs(auth, signature) });
    expect(await balance(payer.address)).toBe(payerBefore - 1_250_000n);
    expect(await balance(merchant.address)).toBe(merchantBefore + 1_250_000n);
  });

  test("behavior: transferWithAuthorization (bytes signature) moves USDC", async () => {
    const auth = authorization(payer, merchant.address, 750_000n);
    const signature = await signAuthorization(payer, auth);
    const merchantBefore = await balance(merchant.address);
    await send(relayer, { functionName: "transferWithAuthorization", args: withBytes(auth, signature) });
    expect(await balance(merchant.address)).toBe(merchantBefore + 750_000n);
  });

  test("behavior: authorizationState flips from false to true when the authorization is used", async () => {
    const auth = authorization(payer, merchant.address, 1n);
    expect(await authorizationState(payer.address, auth.nonce)).toBe(false);
    await send(relayer, { functionName: "transferWithAuthorization", args: withBytes(auth, await signAuthorization(payer, auth)) });
    expect(await authorizationState(payer.address, auth.nonce)).toBe(true);
  });

  test("error: a reused nonce is rejected", async () => {
    const auth = authorization(payer, merchant.address, 10n);
    const signature = await signAuthorization(payer, auth);
    await send(relayer, { functionName: "transferWithAuthorization", args: withVrs(auth, signature) });
    await expect(send(relayer, { functionName: "transferWithAuthorization", args: withVrs(auth, signature) })).rejects.toThrow(
      /authorization is used or canceled/,
    );
    await expect(send(relayer, { functionName: "transferWithAuthorization", args: withBytes(auth, signature) })).rejects.toThrow(
      /authorization is used or canceled/,
    );
  });

  test("error: an expired authorization is rejected", async () => {
    const auth = authorization(payer, merchant.address, 10n, { validBefore: nowSeconds() - 60n });
    await expect(
      send(relayer, { functionName: "transferWithAuthorization", args: withVrs(auth, await signAuthorization(payer, auth)) }),
    ).rejects.toThrow(/authorization is expired/);
  });

  test("error: an authorization not yet valid is rejected", async () => {
    const auth = authorization(payer, merchant.address, 10n, { validAfter: nowSeconds() + 3600n, validBefore: nowSeconds() + 7200n });
    await expect(
      send(relayer, { functionName: "transferWithAuthorization", args: withBytes(auth, await signAuthorization(payer, auth)) }),
    ).rejects.toThrow(/authorization is not yet valid/);
  });

  test("error: a signature by someone other than `from`, or over other terms, is rejected", async () => {
    const auth = authorization(payer, merchant.address, 10n);
    const byOther = await signAuthorization(chain.accounts.other, auth);
    await expect(send(relayer, { functionName: "transferWithAuthorization", args: withVrs(auth, byOther) })).rejects.toThrow(
      /invalid signature/,
    );
    const signed = await signAuthorization(payer, auth);
    const raised = { ...auth, value: 11n };
    await expect(send(relayer, { functionName: "transferWithAuthorization", args: withBytes(raised, signed) })).rejects.toThrow(
      /invalid signature/,
    );
    expect(await authorizationState(payer.address, auth.nonce)).toBe(false);
  });

  test("behavior: cancelAuthorization burns the nonce, so the authorization can no longer be used", async () => {
    const auth = authorization(payer, merchant.address, 10n);
    const signature = await signAuthorization(payer, auth);
    const { v, r, s } = parseSignature(await signCancellation(payer, auth.nonce));
    await send(relayer, { functionName: "cancelAuthorization", args: [payer.address, auth.nonce, Number(v), r, s] });
    expect(await authorizationState(payer.address, auth.nonce)).toBe(true);
    await expect(send(relayer, { functionName: "transferWithAuthorization", args: withVrs(auth, signature) })).rejects.toThrow(
      /authorization is used or canceled/,
    );
  });

  test("behavior: cancelAuthorization (bytes signature) works, and a used nonce cannot be canceled", async () => {
    const auth = authorization(payer, merchant.address, 10n);
    await send(relayer, { functionName: "cancelAuthorization", args: [payer.address, auth.nonce, await signCancellation(payer, auth.nonce)] });
    expect(await authorizationState(payer.address, auth.nonce)).toBe(true);
    await expect(
      send(relayer, { functionName: "cancelAuthorization", args: [payer.address, auth.nonce, await signCancellation(payer, auth.nonce)] }),
    ).rejects.toThrow(/authorization is used or canceled/);
  });

  test("behavior: receiveWithAuthorization works only when the payee submits it (both signature forms)", async () => {
    const auth = authorization(payer, merchant.address, 20n);
    const signature = await signAuthorization(payer, auth, "ReceiveWithAuthorization");
    await expect(send(relayer, { functionName: "receiveWithAuthorization", args: withVrs(auth, signature) })).rejects.toThrow(
      /caller must be the payee/,
    );
    const merchantBefore = await balance(merchant.address);
    await send(merchant, { functionName: "receiveWithAuthorization", args: withVrs(auth, signature) });
    expect(await balance(merchant.address)).toBe(merchantBefore + 20n);

    const second = authorization(payer, merchant.address, 30n);
    await send(merchant, {
      functionName: "receiveWithAuthorization",
      args: withBytes(second, await signAuthorization(payer, second, "ReceiveWithAuthorization")),
    });
    expect(await balance(merchant.address)).toBe(merchantBefore + 50n);
  });

  test("error: a TransferWithAuthorization signature does not work for receiveWithAuthorization", async () => {
    const auth = authorization(payer, merchant.address, 10n);
    await expect(
      send(merchant, { functionName: "receiveWithAuthorization", args: withBytes(auth, await signAuthorization(payer, auth)) }),
    ).rejects.toThrow(/invalid signature/);
  });
});

describe("Multicall3", () => {
  test("behavior: tryAggregate at the canonical address reports each call's success and result", async () => {
    expect(chain.multicall3Address).toBe(MULTICALL3_ADDRESS);
    const payer = chain.accounts.payer.address;
    // tryAggregate is payable (as in the canonical contract), so it is simulated rather than read.
    const { result: results } = await publicClient.simulateContract({
      address: MULTICALL3_ADDRESS,
      abi: multicall3Abi,
      functionName: "tryAggregate",
      args: [
        false,
        [
          { target: chain.usdcAddress, callData: encodeFunctionData({ abi: testUsdcAbi, functionName: "balanceOf", args: [payer] }) },
          // A transfer of more than the whole supply must fail, without failing the batch.
          {
            target: chain.usdcAddress,
            callData: encodeFunctionData({ abi: testUsdcAbi, functionName: "transfer", args: [payer, 2n ** 255n] }),
          },
        ],
      ],
    });
    expect(results).toHaveLength(2);
    expect(results[0]!.success).toBe(true);
    expect(BigInt(results[0]!.returnData)).toBe(await balance(payer));
    expect(results[1]!.success).toBe(false);
  });

  test("behavior: aggregate3 and the block helpers answer", async () => {
    const blockNumber = await publicClient.getBlockNumber({ cacheTime: 0 }); // viem caches it otherwise
    const onChain = await publicClient.readContract({ address: MULTICALL3_ADDRESS, abi: multicall3Abi, functionName: "getBlockNumber" });
    expect(onChain).toBe(blockNumber);
    const eth = await publicClient.readContract({
      address: MULTICALL3_ADDRESS,
      abi: multicall3Abi,
      functionName: "getEthBalance",
      args: [chain.accounts.other.address],
    });
    expect(eth).toBe(await publicClient.getBalance({ address: chain.accounts.other.address }));
    const { result: results } = await publicClient.simulateContract({
      address: MULTICALL3_ADDRESS,
      abi: multicall3Abi,
      functionName: "aggregate3",
      args: [[{ target: chain.usdcAddress, allowFailure: false, callData: encodeFunctionData({ abi: testUsdcAbi, functionName: "symbol" }) }]],
    });
    expect(results[0]!.success).toBe(true);
  });

  test("behavior: viem's multicall works against the dev chain", async () => {
    const [symbol, decimals] = await publicClient.multicall({
      multicallAddress: MULTICALL3_ADDRESS,
      allowFailure: false,
      contracts: [
        { address: chain.usdcAddress, abi: testUsdcAbi, functionName: "symbol" },
        { address: chain.usdcAddress, abi: testUsdcAbi, functionName: "decimals" },
      ],
    });
    expect([symbol, decimals]).toEqual(["USDC", 6]);
  });
});
