/** Every tool, in the order of the spec's tool table, then get_spending_limits (the deprecated ones last). */
import { getBalance } from "./getBalance.ts";
import { getUsdcDepositAddress } from "./getUsdcDepositAddress.ts";
import { getSpendingLimits } from "./getSpendingLimits.ts";
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
  getSpendingLimits,
  sendPayment,
  x402Pay,
  sendUsdc,
];
