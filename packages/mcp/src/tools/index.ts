/** Every tool, in the order of the spec's tool table (the deprecated ones last). */
import { getBalance } from "./getBalance.ts";
import { getUsdcDepositAddress } from "./getUsdcDepositAddress.ts";
import { listTransactions } from "./listTransactions.ts";
import { pay } from "./pay.ts";
import { sendPayment } from "./sendPayment.ts";
import { sendUsdc } from "./sendUsdc.ts";
import { x402Pay } from "./x402Pay.ts";
import type { WalletTool } from "../tool.ts";

export const walletTools: readonly WalletTool[] = [
  getBalance,
  listTransactions,
  pay,
  getUsdcDepositAddress,
  sendPayment,
  x402Pay,
  sendUsdc,
];
