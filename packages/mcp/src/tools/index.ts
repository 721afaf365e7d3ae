/** Every tool, in the order of the spec's tool table, then get_spending_limits, check_price and get_transaction, the deprecated ones, then create_sub_agent_token (only for a token with delegate). */
import { checkPrice } from "./checkPrice.ts";
import { createSubAgentToken } from "./createSubAgentToken.ts";
import { getBalance } from "./getBalance.ts";
import { getTransaction } from "./getTransaction.ts";
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
  checkPrice,
  getTransaction,
  sendPayment,
  x402Pay,
  sendUsdc,
  createSubAgentToken,
];
