// Signs in a worker thread so secp256k1 work never blocks the API's event loop. Receives the master
// mnemonic once (in memory, never logged), then { id, op, ... } messages; answers { id, signature } or
// { id, error }. Plain JavaScript so it runs the same under node, tsx and the test runner.
import { parentPort, workerData } from "node:worker_threads";
import { mnemonicToAccount, privateKeyToAccount } from "viem/accounts";

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
const keys = new Map();
const keyed = (privateKey) => {
  let a = keys.get(privateKey);
  if (!a) keys.set(privateKey, (a = privateKeyToAccount(privateKey)));
  return a;
};

parentPort.on("message", async (m) => {
  try {
    const signature =
      m.op === "typedData" ? await hd(m.index).signTypedData(m.def)
      : m.op === "transaction" ? await keyed(m.privateKey).signTransaction(m.tx)
      : (() => { throw new Error(`unknown op ${m.op}`); })();
    parentPort.postMessage({ id: m.id, signature });
  } catch (err) {
    parentPort.postMessage({ id: m.id, error: String(err && err.message ? err.message : err) });
  }
});
