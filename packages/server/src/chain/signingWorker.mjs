// Signs in a worker thread so secp256k1 work never blocks the API's event loop. Receives the master
// mnemonic once (in memory, never logged), then { id, op, ... } messages; answers { id, signature } or
// { id, error }. Plain JavaScript so it runs the same under node, tsx and the test runner.
import { parentPort, workerData } from "node:worker_threads";
import { mnemonicToAccount } from "viem/accounts";
import { signTypedDataOf } from "./eip3009Digest.mjs";

const mnemonic = workerData.mnemonic;
const accounts = new Map();
const hd = (index) => {
  let a = accounts.get(index);
  if (!a) {
    a = mnemonicToAccount(mnemonic, { addressIndex: index });
    if (accounts.size >= 10000) accounts.delete(accounts.keys().next().value);
    accounts.set(index, a);
  }
  return a;
};

parentPort.on("message", async (m) => {
  try {
    if (m.op !== "typedData") throw new Error(`unknown op ${m.op}`);
    const signature = await signTypedDataOf(hd(m.index), m.def);
    parentPort.postMessage({ id: m.id, signature });
  } catch (err) {
    parentPort.postMessage({ id: m.id, error: String(err && err.message ? err.message : err) });
  }
});
