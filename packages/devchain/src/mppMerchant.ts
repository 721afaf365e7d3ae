// A merchant speaking the Machine Payments Protocol (the "Payment" HTTP authentication scheme) through
// mppx's own server and its EVM charge method: GET|POST /paid answers 402 with `WWW-Authenticate: Payment …`
// (an EIP-3009 authorization of the dev chain's TestUSDC), and a paid retry is settled on-chain by the
// merchant itself (its `settle` submits `transferWithAuthorization` from its own key) before it answers 200
// with a `Payment-Receipt`. mppx's EVM charge offers x402 v2 on the same route too (a `PAYMENT-REQUIRED`
// header beside the challenge); `offers: "mpp"` (the default) strips it, `"both"` keeps it.
import { randomBytes } from "node:crypto";
import { type Address, type Hex, createPublicClient, createWalletClient, defineChain, formatUnits, http, parseAbi } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { USDC_EIP712_DOMAIN } from "./merchants.ts";
import { listenOnLoopback } from "./listen.ts";

export type StartMppMerchantOptions = {
  rpcUrl: string;
  chainId: number;
  /** The dev chain's TestUSDC (EIP-3009). */
  usdcAddress: Address;
  /** Who gets paid. */
  payTo: Address;
  /** Price of one /paid request in USDC base units. */
  priceMicros: bigint;
  /** The key that submits the authorizations on-chain (pays the gas); any funded dev account. */
  settlerKey: Hex;
  /** Loopback port; a free one when omitted. */
  port?: number;
  /** "mpp": the 402 offers MPP only; "both": also x402 v2, as mppx offers it by default. */
  offers?: "mpp" | "both";
};

export type MppMerchant = {
  url: string;
  /** How many payments the merchant settled on-chain, and their transactions. */
  settled(): Hex[];
  /** Changes the price of the next challenges (a merchant that raises its price). */
  setPrice(priceMicros: bigint): void;
  stop(): Promise<void>;
};

const transferWithAuthorizationAbi = parseAbi([
  "function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)",
]);

export async function startMppMerchant(o: StartMppMerchantOptions): Promise<MppMerchant> {
  // Loaded here, not with the package: mppx's server brings viem's Tempo chains (some 160 modules), which the
  // sandbox, which runs no MPP merchant, would load at every start and every CLI command.
  const { Mppx, NodeListener, Request: MppRequest, evm } = await import("mppx/server");
  const chain = defineChain({ id: o.chainId, name: "dev", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [o.rpcUrl] } } });
  const account = privateKeyToAccount(o.settlerKey);
  const wallet = createWalletClient({ account, chain, transport: http(o.rpcUrl) });
  // Automine answers at once: poll for the settlement's receipt often, not every 4 s (viem's default).
  const reader = createPublicClient({ chain, transport: http(o.rpcUrl), pollingInterval: 50 });
  const settled: Hex[] = [];
  let price = o.priceMicros;
  const mppx = Mppx.create({
    methods: [
      evm.charge({
        currency: o.usdcAddress,
        chainId: o.chainId,
        decimals: 6,
        authorization: { ...USDC_EIP712_DOMAIN },
        recipient: o.payTo,
        async settle({ payload }) {
          const p = payload as { from: Address; to: Address; value: string; validAfter: string; validBefore: string; nonce: Hex; signature: Hex };
          const hash = await wallet.writeContract({
            address: o.usdcAddress,
            abi: transferWithAuthorizationAbi,
            functionName: "transferWithAuthorization",
            args: [p.from, p.to, BigInt(p.value), BigInt(p.validAfter), BigInt(p.validBefore), p.nonce, p.signature],
          });
          const receipt = await reader.waitForTransactionReceipt({ hash, timeout: 30_000 });
          if (receipt.status !== "success") throw new Error(`settlement ${hash} reverted`);
          settled.push(hash);
          return { reference: hash };
        },
      }),
    ],
    secretKey: randomBytes(32).toString("base64"),
  });
  const listening = await listenOnLoopback(async (req, res) => {
    try {
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      if (url.pathname === "/free") {
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ free: true }));
        return;
      }
      if (url.pathname !== "/paid") {
        res.writeHead(404).end();
        return;
      }
      const request = MppRequest.fromNodeListener(req, res);
      const result = await mppx.charge({ amount: formatUnits(price, 6) })(request);
      if (result.status === 402) {
        const challenge = result.challenge;
        if ((o.offers ?? "mpp") === "mpp") challenge.headers.delete("payment-required");
        return void (await NodeListener.sendResponse(res, challenge));
      }
      await NodeListener.sendResponse(res, result.withReceipt(Response.json({ paid: true, method: req.method })));
    } catch (err) {
      if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" }).end(String(err));
    }
  }, o.port);
  return {
    url: listening.url,
    settled: () => [...settled],
    setPrice(p) {
      price = p;
    },
    stop: () => listening.close(),
  };
}
