// Signs in a worker thread so secp256k1 work never blocks the API's event loop. Receives the master
// mnemonic once (in memory, never logged), then { id, op, ... } messages; answers { id, signature } or
// { id, error }. Plain JavaScript so it runs the same under node, tsx and the test runner.
import { parentPort, workerData } from "node:worker_threads";
import { signTypedDataOf } from "./eip3009Digest.mjs";
import { hdWallets } from "./hdWallets.mjs";

const hd = hdWallets(workerData.mnemonic);

parentPort.on("message", async (m) => {
  try {
    if (m.op !== "typedData") throw new Error(`unknown op ${m.op}`);
    const signature = await signTypedDataOf(hd(m.index), m.def);
    parentPort.postMessage({ id: m.id, signature });
  } catch (err) {
    parentPort.postMessage({ id: m.id, error: String(err && err.message ? err.message : err) });
  }
});
