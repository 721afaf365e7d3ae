/**
 * How long the relayer's ETH lasts at the recent payment rate: the relayer pays the gas of every USDC and
 * bank payment (one Multicall3 transaction carrying the payment's legs). An estimate for alerts and
 * `doctor`: the gas of one payment is taken as `GAS_PER_PAYMENT`, at the chain's current gas price.
 */

/**
 * Gas of one relayed payment: a transfer leg and a fee leg (two `transferWithAuthorization`, ~60k each on
 * FiatToken) inside a Multicall3 call, plus the transaction's base cost. Batches share the base cost, so
 * this errs on the side of less runway.
 */
export const GAS_PER_PAYMENT = 140_000n;

export type RelayerRunway = {
  balanceWei: bigint;
  /** The wei one payment costs at the current gas price. */
  weiPerPayment: bigint;
  /** Payments the relayer can still pay for. */
  paymentsLeft: bigint;
  /** Seconds until the ETH runs out at the last day's rate; undefined when there were no payments. */
  runwaySeconds: number | undefined;
};

export function relayerRunway(o: { balanceWei: bigint; gasPriceWei: bigint; paymentsLastDay: number }): RelayerRunway {
  const weiPerPayment = o.gasPriceWei * GAS_PER_PAYMENT;
  // A chain that charges no gas (a local one) lets any funded relayer pay without end.
  const paymentsLeft = weiPerPayment === 0n ? (o.balanceWei > 0n ? BigInt(Number.MAX_SAFE_INTEGER) : 0n) : o.balanceWei / weiPerPayment;
  const runwaySeconds = o.paymentsLastDay > 0 ? Number(paymentsLeft) * (86_400 / o.paymentsLastDay) : undefined;
  return { balanceWei: o.balanceWei, weiPerPayment, paymentsLeft, runwaySeconds };
}
